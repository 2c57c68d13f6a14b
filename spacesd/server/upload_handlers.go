package server

import (
	"net/http"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
)

func (g *fileGroup) handleUploadBegin(w http.ResponseWriter, r *http.Request) {
	req, err := decodeBody[api.UploadRequest](r)
	if err != nil {
		writeError(w, err)
		return
	}
	st, err := g.uploads.Begin(req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (g *fileGroup) handleUploadStatus(w http.ResponseWriter, r *http.Request) {
	st, err := g.uploads.Status(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// handleUploadChunk appends one chunk. A chunk cut short keeps what arrived;
// the error says the offset to resume from, as does GET /v1/uploads/{id}.
func (g *fileGroup) handleUploadChunk(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if r.URL.Query().Get("offset") == "" {
		writeError(w, api.Errorf(api.KindInvalidArgument, "upload %s: the offset query parameter is required", id))
		return
	}
	offset, err := queryInt(r, "offset", 0, 0, 1<<62)
	if err != nil {
		writeError(w, err)
		return
	}
	if r.ContentLength > files.MaxUploadChunkBytes {
		writeError(w, api.Errorf(api.KindInvalidArgument, "upload %s: a chunk of %d bytes is over the limit of %d (limits.upload_chunk_bytes)",
			id, r.ContentLength, files.MaxUploadChunkBytes))
		return
	}
	body := readIdle(w, http.MaxBytesReader(w, r.Body, files.MaxUploadChunkBytes))
	defer body.done()
	st, err := g.uploads.Put(r.Context(), id, offset, body, g.countIn())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (g *fileGroup) handleUploadCommit(w http.ResponseWriter, r *http.Request) {
	res, err := g.uploads.Commit(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set(api.HeaderSHA256, res.SHA256)
	writeJSON(w, http.StatusOK, res)
}

func (g *fileGroup) handleUploadAbort(w http.ResponseWriter, r *http.Request) {
	answer(w, noContent{}, g.uploads.Abort(r.Context(), r.PathValue("id")))
}
