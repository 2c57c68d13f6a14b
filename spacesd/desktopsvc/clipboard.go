package desktopsvc

import (
	"net/http"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

func (s *Service) clipboardGet(w http.ResponseWriter, r *http.Request) {
	text, err := s.d.ClipboardGet(r.Context())
	httpapi.Answer(w, api.ClipboardText{Text: text}, err)
}

func (s *Service) clipboardSet(r *http.Request, req api.ClipboardText) (httpapi.NoContent, error) {
	return httpapi.NoContent{}, s.d.ClipboardSet(r.Context(), req.Text)
}
