package filesvc

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
	"github.com/trycua/cua-spacesd/capabilities/files"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// Bounds of a watch's WebSocket.
const (
	// watchWriteTimeout bounds every write: a client that stops reading
	// cannot hold the handler; its events queue (bounded) and overflow.
	watchWriteTimeout = 10 * time.Second
	// watchPingInterval keeps idle watches alive through proxies and lets
	// a vanished client be noticed.
	watchPingInterval = 30 * time.Second
)

var watchUpgrader = websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 4096}

// handleWatch streams api.WatchEvent messages until the client leaves or
// the request's context ends (shutdown, or rotation of the token).
func (s *Service) handleWatch(w http.ResponseWriter, r *http.Request) {
	recursive, err := httpapi.QueryBool(r, "recursive")
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// Start the watch before the upgrade, so a bad path answers in our
	// error envelope rather than as a closed socket.
	fw, err := files.Watch(ctx, r.URL.Query().Get("path"), files.WatchOptions{Recursive: recursive})
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	defer fw.Close()
	conn, err := watchUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	defer conn.Close()

	// The reader notices the client closing; it owns no state and ends
	// once the connection is closed below.
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer cancel()
		for {
			if _, _, err := conn.NextReader(); err != nil {
				return
			}
		}
	}()
	defer func() { conn.Close(); <-readDone }()

	for {
		nctx, ncancel := context.WithTimeout(ctx, watchPingInterval)
		ev, err := fw.Next(nctx)
		ncancel()
		deadline := time.Now().Add(watchWriteTimeout)
		if err != nil {
			if ctx.Err() != nil {
				_ = conn.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(websocket.CloseGoingAway, "watch ended"), deadline)
				return
			}
			if errors.Is(nctx.Err(), context.DeadlineExceeded) {
				if conn.WriteControl(websocket.PingMessage, nil, deadline) != nil {
					return
				}
				continue
			}
			return
		}
		_ = conn.SetWriteDeadline(deadline)
		if err := conn.WriteJSON(ev); err != nil {
			return
		}
	}
}
