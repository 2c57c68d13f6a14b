package desktopsvc

import (
	"net/http"

	"github.com/trycua/cua-spacesd/api"
)

func (s *Service) move(r *http.Request, req api.MouseMoveRequest) (api.InputResult, error) {
	return s.d.MoveMouse(r.Context(), req)
}

func (s *Service) click(r *http.Request, req api.ClickRequest) (api.InputResult, error) {
	return s.d.Click(r.Context(), req)
}

func (s *Service) drag(r *http.Request, req api.DragRequest) (api.InputResult, error) {
	return s.d.Drag(r.Context(), req)
}

func (s *Service) scroll(r *http.Request, req api.ScrollRequest) (api.InputResult, error) {
	return s.d.Scroll(r.Context(), req)
}

func (s *Service) key(r *http.Request, req api.KeyRequest) (api.InputResult, error) {
	return s.d.Key(r.Context(), req.Key)
}

func (s *Service) typeText(r *http.Request, req api.TypeRequest) (api.InputResult, error) {
	return s.d.Type(r.Context(), req.Text)
}
