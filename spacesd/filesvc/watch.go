package filesvc

import (
	"net/http"

	"github.com/gorilla/websocket"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// handleWatch streams api.WatchEvent messages until the client leaves or
// the request's context ends (shutdown, or rotation of the token).
func (s *Service) handleWatch(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseFileWatchQuery(r.URL.Query())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	// Start the watch before the upgrade, so a bad path answers in our
	// error envelope rather than as a closed socket.
	fw, err := files.Watch(r.Context(), q.Path, files.WatchOptions{Recursive: q.Recursive})
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	defer fw.Close()
	st, err := httpapi.Upgrade(w, r, httpapi.StreamOptions{})
	if err != nil {
		return // the upgrader has answered
	}
	for {
		ev, err := fw.Next(st.Context())
		if err != nil {
			reason := "" // the stream's context says why
			if st.Context().Err() == nil {
				reason = "watch ended: " + err.Error()
			}
			st.Close(websocket.CloseGoingAway, reason)
			return
		}
		// A client that stops reading is dropped after StreamWriteWait;
		// meanwhile its events queue (bounded) and overflow.
		if err := st.WriteJSON(ev); err != nil {
			st.Close(websocket.CloseGoingAway, "")
			return
		}
	}
}
