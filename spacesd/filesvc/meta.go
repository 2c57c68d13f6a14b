package filesvc

import (
	"net/http"

	"github.com/trycua/cua-spacesd/capabilities/files"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

func (s *Service) handleStat(w http.ResponseWriter, r *http.Request) {
	fi, err := files.Stat(r.URL.Query().Get("path"))
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, fi)
}

func (s *Service) handleList(w http.ResponseWriter, r *http.Request) {
	depth, err := httpapi.QueryInt(r, "depth", 1, 1, files.MaxListDepth)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	hidden, err := httpapi.QueryBool(r, "hidden")
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	res, err := files.List(r.Context(), r.URL.Query().Get("path"), int(depth), hidden)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, res)
}
