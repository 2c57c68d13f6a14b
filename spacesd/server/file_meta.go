package server

import (
	"net/http"

	"github.com/trycua/cua-spacesd/capabilities/files"
	"github.com/trycua/cua-spacesd/spacesd/api"
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

// okBody is the answer of calls that only succeed or fail.
type okBody struct {
	OK bool `json:"ok"`
}

func (g *fileGroup) handleMkdir(w http.ResponseWriter, r *http.Request) {
	req, err := decodeBody[api.MkdirRequest](r)
	if err == nil {
		err = files.Mkdir(req)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, okBody{OK: true})
}

func (g *fileGroup) handleMove(w http.ResponseWriter, r *http.Request) {
	req, err := decodeBody[api.MoveRequest](r)
	if err == nil {
		err = files.Move(req)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, okBody{OK: true})
}

func (g *fileGroup) handleRemove(w http.ResponseWriter, r *http.Request) {
	req, err := decodeBody[api.RemoveRequest](r)
	if err == nil {
		err = files.Remove(req)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, okBody{OK: true})
}
