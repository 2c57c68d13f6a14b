package desktopsvc

import (
	"net/http"
	"strconv"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// windowID parses the {id} of a window route.
func windowID(r *http.Request) (uint32, error) {
	s := r.PathValue("id")
	id, err := strconv.ParseUint(s, 0, 32)
	if err != nil || id == 0 {
		return 0, api.Errorf(api.KindInvalidArgument, "window id %q is not a window id (a number from GET /v1/windows)", s)
	}
	return uint32(id), nil
}

func (s *Service) windows(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseWindowsQuery(r.URL.Query())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	list, err := s.d.Windows(r.Context(), q.AppName)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, list)
}

func (s *Service) activate(w http.ResponseWriter, r *http.Request) {
	id, err := windowID(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	win, err := s.d.ActivateWindow(r.Context(), id)
	httpapi.Answer(w, win, err)
}

func (s *Service) closeWindow(w http.ResponseWriter, r *http.Request) {
	id, err := windowID(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.Answer(w, httpapi.NoContent{}, s.d.CloseWindow(r.Context(), id))
}

func (s *Service) geometry(w http.ResponseWriter, r *http.Request) {
	id, err := windowID(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	req, err := httpapi.DecodeBody[api.GeometryRequest](r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	win, err := s.d.SetWindowGeometry(r.Context(), id, req)
	httpapi.Answer(w, win, err)
}

func (s *Service) windowState(w http.ResponseWriter, r *http.Request) {
	id, err := windowID(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	req, err := httpapi.DecodeBody[api.WindowStateRequest](r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	win, err := s.d.SetWindowState(r.Context(), id, req.State)
	httpapi.Answer(w, win, err)
}

func (s *Service) launch(r *http.Request, req api.LaunchRequest) (*api.LaunchResult, error) {
	return s.d.LaunchApp(r.Context(), req)
}
