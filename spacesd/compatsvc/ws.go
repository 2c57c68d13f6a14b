package compatsvc

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// serveWS is GET /ws: the bus over a WebSocket. Its commands run one at a
// time, in the order they came, each answered before the next runs, so the
// answers come in order too. The reader goes on reading meanwhile (pings,
// pongs, the next commands, up to commandQueueDepth), so a long command
// does not starve the keep-alive.
//
// A client that presented the token on the upgrade (X-API-Key or a
// bearer), or a daemon without a token, runs commands at once. Otherwise
// the first message must be authenticate with the token as api_key, within
// AuthTimeout; anything else is refused and the connection closed before
// any command runs.
func (s *Service) serveWS(w http.ResponseWriter, r *http.Request) {
	pending := server.CallerOf(r.Context()).Pending
	ws := &wsClient{svc: s, reqCtx: r.Context(), awaiting: pending,
		queue: make(chan []byte, commandQueueDepth), authed: make(chan inBand, 1), ready: make(chan struct{})}
	limit := int64(MaxMessageBytes)
	if pending {
		limit = maxAuthMessageBytes
	}
	st, err := httpapi.Upgrade(w, r, httpapi.StreamOptions{OnMessage: ws.onMessage, MaxMessageBytes: limit})
	if err != nil {
		return
	}
	ws.st = st
	close(ws.ready)
	c := s.newConn()
	defer c.close()

	ctx := st.Context()
	if pending {
		var ok bool
		if ctx, ok = ws.waitAuth(ctx); !ok {
			return
		}
	}
	for {
		select {
		case <-ctx.Done():
			st.Close(websocket.CloseGoingAway, "")
			return
		case msg := <-ws.queue:
			answer, _ := s.answer(ctx, c, msg)
			if err := st.WriteJSON(json.RawMessage(answer)); err != nil {
				st.Close(websocket.CloseGoingAway, "")
				return
			}
		}
	}
}

// wsClient is one WebSocket of the bus, as its reader sees it.
type wsClient struct {
	svc    *Service
	reqCtx context.Context
	st     *httpapi.Stream
	ready  chan struct{} // closed once st is set

	// awaiting is set while the first message must authenticate; only
	// the reader touches it.
	awaiting bool
	authed   chan inBand
	queue    chan []byte
}

// inBand is the outcome of an in-band authentication: a session context
// (ended by a token rotation) and its end, or why it failed.
type inBand struct {
	ctx context.Context
	end context.CancelCauseFunc
	err error
}

// onMessage runs on the stream's reader: it authenticates the first
// message when it must, and queues the others for the handler.
func (ws *wsClient) onMessage(ctx context.Context, msg []byte) error {
	<-ws.ready
	if ws.awaiting {
		ws.awaiting = false
		res := ws.authenticate(msg)
		if res.err == nil {
			ws.st.SetReadLimit(MaxMessageBytes)
		}
		ws.authed <- res
		return nil
	}
	select {
	case ws.queue <- msg:
	case <-ctx.Done():
	}
	return nil
}

// authenticate checks the first message of a client that presented no
// credentials on the upgrade. Anything but an authenticate message with
// the right key is a failed attempt, logged and slowed as one.
func (ws *wsClient) authenticate(msg []byte) inBand {
	m, err := decodeMessage(msg)
	key, isAuth := "", err == nil && m.Command == "authenticate"
	if isAuth {
		p, err := bindParams[authParams](m.Params, nil)
		isAuth = err == nil
		key = p.APIKey
	}
	ctx, end, err := ws.svc.host.Authenticate(ws.reqCtx, key)
	switch {
	case !isAuth:
		if end != nil {
			end(nil)
		}
		return inBand{err: errFirstMustAuth}
	case err != nil:
		return inBand{err: errAuthFailed}
	}
	return inBand{ctx: ctx, end: end}
}

var errFirstMustAuth = api.Errorf(api.KindUnauthenticated,
	`First message must be authentication: send {"command": "authenticate", "params": {"api_key": <the Space's token>}} before any command`).
	WithHint("give the client the Space's cua-spacesd token as its API key, or send it as X-API-Key on the upgrade")

// waitAuth waits for the in-band authentication and answers it. It
// returns the context the commands run in (the stream's, ended also by a
// rotation of the token that authenticated) and whether to go on.
func (ws *wsClient) waitAuth(ctx context.Context) (context.Context, bool) {
	timer := time.NewTimer(AuthTimeout)
	defer timer.Stop()
	select {
	case res := <-ws.authed:
		if res.err != nil {
			_ = ws.st.WriteJSON(json.RawMessage(failure(res.err, nil)))
			ws.st.Close(websocket.ClosePolicyViolation, "authentication failed")
			return nil, false
		}
		// The session ends with the stream or the token, whichever first.
		sctx, cancel := context.WithCancelCause(ctx)
		context.AfterFunc(res.ctx, func() { cancel(context.Cause(res.ctx)) })
		context.AfterFunc(sctx, func() { res.end(nil) })
		if err := ws.st.WriteJSON(json.RawMessage(mustSuccess(authResult{Message: "Authentication successful"}))); err != nil {
			cancel(err)
			ws.st.Close(websocket.CloseGoingAway, "")
			return nil, false
		}
		return sctx, true
	case <-timer.C:
		_ = ws.st.WriteJSON(json.RawMessage(failure(api.Errorf(api.KindUnauthenticated,
			"no authenticate message within %s of connecting", AuthTimeout), nil)))
		ws.st.Close(websocket.ClosePolicyViolation, "authentication timed out")
		return nil, false
	case <-ctx.Done():
		ws.st.Close(websocket.CloseGoingAway, "")
		return nil, false
	}
}

func mustSuccess(v any) []byte {
	b, err := success(v)
	if err != nil {
		panic(err) // a fixed result type that does not encode is a bug here
	}
	return b
}
