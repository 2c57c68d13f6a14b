// Package mcpclient is a small MCP client that keeps every result as the
// server sent it. cua-spacesd talks to the MCP services a Space declares
// with it, and cua-bridge to a daemon's /mcp: both pass a tool's result on
// to their own caller, and re-encoding it through typed content parts would
// drop what the types do not know (a new part type, a field) and rewrite
// base64 and numbers. Framing is the official SDK's (its stdio and
// streamable HTTP transports); requests, answers, progress and cancellation
// are here.
package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolVersion is the revision a session asks for; a server may answer
// with any of KnownVersions.
const ProtocolVersion = "2025-11-25"

// KnownVersions are the revisions with initialize that a session accepts:
// for what a client does (list tools, call them, hear progress, cancel)
// they do not differ.
var KnownVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// MaxMessageBytes bounds one message from a server: a screenshot's image
// part is a few MB of base64, and the SDK's own default is this much.
const MaxMessageBytes = sdk.DefaultMaxLineLength

// cancelNotifyTimeout bounds the writes a session makes on its own: the
// notifications/cancelled of a call its caller left, an answer to a ping.
const cancelNotifyTimeout = 5 * time.Second

// streamDrainGrace is how long a call's answer stream may still be read
// after its answer came: the SDK reads it to its end, so that its
// connection goes back to the pool, and the server ends it at once.
const streamDrainGrace = 5 * time.Second

// maxToolPages bounds the pages of one tools/list: a server that keeps
// answering a cursor would otherwise be followed for ever.
const maxToolPages = 100

// ErrClosed is the cause of every call that a session's end interrupted.
var ErrClosed = errors.New("the MCP session ended")

// ErrNotProcessed marks a call the server surely did not run: the session
// had ended before the request was sent, or the server answered that it no
// longer knows the session (HTTP 404 on its id, as streamable HTTP says of
// a session it ended or never had: a restart, an idle expiry, a rotated
// token). Such a call may be made again on a new session; a call that
// failed any other way may have run.
var ErrNotProcessed = errors.New("the server did not process the request")

// RPCError is a JSON-RPC error a server answered a request with.
type RPCError struct {
	Code    int64
	Message string
}

func (e *RPCError) Error() string { return fmt.Sprintf("%s (JSON-RPC %d)", e.Message, e.Code) }

// Options configure a session.
type Options struct {
	// ClientName and ClientVersion name the client in initialize.
	ClientName, ClientVersion string
	// Notify receives the server's notifications other than progress
	// (notifications/message, list changes); nil drops them.
	Notify func(method string, params json.RawMessage)
	Logger *slog.Logger
}

// Progress is one notifications/progress of a call.
type Progress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// Session is one initialized MCP session. Its methods are safe for
// concurrent use.
type Session struct {
	conn    sdk.Connection
	opts    Options
	version string

	mu       sync.Mutex
	nextID   int64
	pending  map[int64]chan *jsonrpc.Response
	progress map[string]func(Progress)
	closed   bool
	err      error // why the session ended
	done     chan struct{}
}

// Connect initializes a session over t. ctx bounds the handshake only: a
// server that never answers initialize fails with ctx's error (and its
// transport is closed), never hangs the caller. onVersion, when set, hears
// the revision agreed before the first request that follows initialize.
func Connect(ctx context.Context, t sdk.Transport, o Options, onVersion func(string)) (*Session, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	s := &Session{
		conn: conn, opts: o,
		pending:  map[int64]chan *jsonrpc.Response{},
		progress: map[string]func(Progress){},
		done:     make(chan struct{}),
	}
	go s.read()
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	raw, err := s.Call(ctx, "initialize", map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]string{"name": o.ClientName, "version": o.ClientVersion},
	}, nil)
	if err == nil {
		err = json.Unmarshal(raw, &init)
	}
	if err == nil && !slices.Contains(KnownVersions, init.ProtocolVersion) {
		err = fmt.Errorf("the server answered initialize with MCP %q; this client speaks %v", init.ProtocolVersion, KnownVersions)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	s.version = init.ProtocolVersion
	if onVersion != nil {
		onVersion(s.version)
	}
	if err := s.notify(ctx, "notifications/initialized", map[string]any{}); err != nil {
		s.Close()
		return nil, fmt.Errorf("initialized: %w", err)
	}
	return s, nil
}

// ProtocolVersion is the revision the session speaks.
func (s *Session) ProtocolVersion() string { return s.version }

// Done is closed when the session has ended (Err says why).
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is why the session ended, nil while it runs.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the session (over HTTP, with DELETE) and fails what runs.
func (s *Session) Close() error {
	s.end(ErrClosed)
	return s.conn.Close()
}

// Call sends one request and answers its result as the server sent it. A
// JSON-RPC error is an *RPCError. With progress, the request carries a
// progress token and each notifications/progress of it reaches progress.
// When ctx ends first, the server is told (notifications/cancelled) and
// ctx's error answered.
func (s *Session) Call(ctx context.Context, method string, params any, progress func(Progress)) (json.RawMessage, error) {
	s.mu.Lock()
	if s.closed {
		err := s.err
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrNotProcessed, err)
	}
	s.nextID++
	id := s.nextID
	reply := make(chan *jsonrpc.Response, 1)
	s.pending[id] = reply
	token := ""
	if progress != nil {
		token = "cua-" + strconv.FormatInt(id, 10)
		s.progress[token] = progress
	}
	s.mu.Unlock()
	defer s.forget(id, token)

	p, err := withProgressToken(params, token)
	if err != nil {
		return nil, err
	}
	// Over HTTP the SDK reads the answer's stream to its end after handing
	// the answer over. The request must not end with ctx then (a caller's
	// ctx ends as soon as it has its answer): that would cut the read and
	// close the connection, and the next call would dial, over TLS with a
	// handshake, again. So the request ends with ctx until the answer came,
	// and streamDrainGrace after it.
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	unlink := context.AfterFunc(ctx, wcancel)
	answered := false
	defer func() {
		if answered && unlink() {
			time.AfterFunc(streamDrainGrace, wcancel)
			return
		}
		wcancel()
	}()
	jid, _ := jsonrpc.MakeID(float64(id))
	if err := s.conn.Write(wctx, &jsonrpc.Request{ID: jid, Method: method, Params: p}); err != nil {
		if ctx.Err() != nil {
			// Over HTTP a write lasts until the answer's headers come, which
			// a server streaming its answer may send only with its first
			// event: the request may well be running there.
			s.cancel(ctx, id)
			return nil, ctx.Err()
		}
		werr := fmt.Errorf("%w: write %s: %w", ErrClosed, method, err)
		s.end(werr)
		if errors.Is(err, sdk.ErrSessionMissing) {
			// Refused at the session's lookup, before anything ran.
			return nil, fmt.Errorf("%w: %w", ErrNotProcessed, werr)
		}
		return nil, s.Err()
	}
	select {
	case r := <-reply:
		answered = true
		if r.Error != nil {
			var we *jsonrpc.Error
			if errors.As(r.Error, &we) {
				return nil, &RPCError{Code: we.Code, Message: we.Message}
			}
			return nil, r.Error
		}
		return r.Result, nil
	case <-s.done:
		return nil, s.Err()
	case <-ctx.Done():
		s.cancel(ctx, id)
		return nil, ctx.Err()
	}
}

// cancel tells the server that the caller left request id (whose ctx
// ended): best effort, bounded by cancelNotifyTimeout. The server stops the
// work if it hears this, and ignores an id it does not know.
func (s *Session) cancel(ctx context.Context, id int64) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelNotifyTimeout)
	defer cancel()
	_ = s.notify(cctx, "notifications/cancelled", map[string]any{"requestId": id, "reason": context.Cause(ctx).Error()})
}

// forget drops a finished call's bookkeeping.
func (s *Session) forget(id int64, token string) {
	s.mu.Lock()
	delete(s.pending, id)
	if token != "" {
		delete(s.progress, token)
	}
	s.mu.Unlock()
}

// withProgressToken is params with _meta.progressToken set (token "": as
// they are).
func withProgressToken(params any, token string) (json.RawMessage, error) {
	raw, err := json.Marshal(params)
	if err != nil || token == "" {
		return raw, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("params must be an object to carry a progress token: %w", err)
	}
	var meta map[string]any
	if b, ok := m["_meta"]; ok {
		_ = json.Unmarshal(b, &meta)
	}
	if meta == nil {
		meta = map[string]any{}
	}
	meta["progressToken"] = token
	if m["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

func (s *Session) notify(ctx context.Context, method string, params any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return s.conn.Write(ctx, &jsonrpc.Request{Method: method, Params: p})
}

// end fails every call in flight with cause, once.
func (s *Session) end(cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed, s.err = true, cause
	close(s.done)
}

// read dispatches what the server sends until the connection ends.
func (s *Session) read() {
	for {
		msg, err := s.conn.Read(context.Background())
		if err != nil {
			s.end(fmt.Errorf("%w: %w", ErrClosed, err))
			_ = s.conn.Close()
			return
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			id, ok := m.ID.Raw().(int64)
			s.mu.Lock()
			reply := s.pending[id]
			s.mu.Unlock()
			if ok && reply != nil {
				reply <- m
			}
		case *jsonrpc.Request:
			if m.ID.IsValid() {
				s.answer(m)
				continue
			}
			s.notification(m)
		}
	}
}

// answer replies to a request of the server: ping, and nothing else (no
// sampling, roots or elicitation: nobody is there to answer them).
func (s *Session) answer(r *jsonrpc.Request) {
	resp := &jsonrpc.Response{ID: r.ID}
	if r.Method == "ping" {
		resp.Result = json.RawMessage(`{}`)
	} else {
		resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "this client serves no " + r.Method}
	}
	// Off the read loop: over HTTP a write is a POST, which must not hold
	// up the answers behind it.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), cancelNotifyTimeout)
		defer cancel()
		_ = s.conn.Write(ctx, resp)
	}()
}

func (s *Session) notification(r *jsonrpc.Request) {
	if r.Method != "notifications/progress" {
		if s.opts.Notify != nil {
			s.opts.Notify(r.Method, r.Params)
		}
		return
	}
	var p struct {
		Token any `json:"progressToken"`
		Progress
	}
	if json.Unmarshal(r.Params, &p) != nil {
		return
	}
	token, _ := p.Token.(string)
	s.mu.Lock()
	f := s.progress[token]
	s.mu.Unlock()
	if f != nil {
		f(p.Progress)
	}
}
