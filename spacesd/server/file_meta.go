package server

import (
	"net/http"

	"github.com/trycua/cua-spacesd/capabilities/files"
)

func (g *fileGroup) handleStat(w http.ResponseWriter, r *http.Request) {
	fi, err := files.Stat(r.URL.Query().Get("path"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, fi)
}

func (g *fileGroup) handleList(w http.ResponseWriter, r *http.Request) {
	depth, err := queryInt(r, "depth", 1, 1, files.MaxListDepth)
	if err != nil {
		writeError(w, err)
		return
	}
	hidden, err := queryBool(r, "hidden")
	if err != nil {
		writeError(w, err)
		return
	}
	res, err := files.List(r.Context(), r.URL.Query().Get("path"), int(depth), hidden)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
