package filesvc

import (
	"net/http"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

func (s *Service) handleStat(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseFileStatQuery(r.URL.Query())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	fi, err := files.Stat(q.Path)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, fi)
}

func (s *Service) handleList(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseFileListQuery(r.URL.Query())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	res, err := files.List(r.Context(), q.Path, q.Depth, q.Hidden)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, res)
}
