package filesvc

import (
	"net/http"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

func (s *Service) handleUploadBegin(w http.ResponseWriter, r *http.Request) {
	req, err := httpapi.DecodeBody[api.UploadRequest](r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	st, err := s.uploads.Begin(req)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, st)
}

func (s *Service) handleUploadStatus(w http.ResponseWriter, r *http.Request) {
	st, err := s.uploads.Status(r.PathValue("id"))
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, st)
}

// handleUploadChunk appends one chunk. A chunk cut short keeps what arrived;
// the error says the offset to resume from, as does GET /v1/uploads/{id}.
// A chunk whose Content-Length is past the announced size (or the chunk
// limit) is refused before a byte of it is read; one without a length is
// checked by the upload as it lands, and refused whole.
func (s *Service) handleUploadChunk(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	q, err := api.ParseUploadChunkQuery(r.URL.Query())
	if err != nil {
		httpapi.WriteError(w, api.Errorf(api.KindInvalidArgument, "upload %s: %w", id, err))
		return
	}
	body := httpapi.ReadIdle(w, r.Body)
	defer body.Done()
	st, err := s.uploads.Put(r.Context(), id, q.Offset, r.ContentLength, body, s.countIn())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, st)
}

func (s *Service) handleUploadCommit(w http.ResponseWriter, r *http.Request) {
	res, err := s.uploads.Commit(r.Context(), r.PathValue("id"))
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	w.Header().Set(api.HeaderSHA256, res.SHA256)
	httpapi.WriteJSON(w, http.StatusOK, res)
}

func (s *Service) handleUploadAbort(w http.ResponseWriter, r *http.Request) {
	httpapi.Answer(w, httpapi.NoContent{}, s.uploads.Abort(r.Context(), r.PathValue("id")))
}
