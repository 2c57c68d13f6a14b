package mcpserve

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Headers of MCP's streamable HTTP transport.
const (
	SessionHeader = "Mcp-Session-Id"
	VersionHeader = "Mcp-Protocol-Version"
	methodHeader  = "Mcp-Method"
	nameHeader    = "Mcp-Name"
)

// Session bounds. Sessions cost about 10 KB each and clients do not always
// end theirs (DELETE): 2,000 of them once stayed open for good.
const (
	// MaxSessions bounds the MCP sessions open at once. A client holds one
	// or a few; hundreds mean sessions nobody ends, which idle expiry
	// reclaims. An initialize at the cap ends the session idle longest
	// (sessionTable).
	MaxSessions = 256
	// SessionIdleTimeout ends a session that has had no request for that
	// long (the SDK's SessionTimeout: a running call holds it open). A
	// later request with its id answers 404, the transport's word for
	// "start a new session", and a conforming client initializes again.
	SessionIdleTimeout = time.Hour
	// CodeTooManySessions is the JSON-RPC error of an initialize at
	// MaxSessions when every session has a request running, so none can
	// be evicted (-32000..-32099 are the implementation's own).
	CodeTooManySessions = -32000
)

// HTTPOptions configure the streamable HTTP handler.
type HTTPOptions struct {
	// Path is where the handler is mounted ("/mcp"), named in its answers.
	Path string
	// MaxSessions and SessionIdle replace MaxSessions and
	// SessionIdleTimeout when set (tests).
	MaxSessions int
	SessionIdle time.Duration
	// Caller, when set, tells who made a request (the program mounting
	// the handler authenticated it): each tool call the request carries
	// finds c in Call.Caller. A session opened by one user (user, "" for
	// none) answers another's requests 403: its id alone does not make
	// someone its user.
	Caller func(r *http.Request) (user string, c any)
}

// Handler serves MCP over streamable HTTP: the gate (JSON-RPC errors), the
// session cap (evicting the session idle longest, or 503), then the SDK's streamable handler: the stateful one
// for the revisions with sessions, a stateless one for ModernVersion
// requests, which have none (serving them statefully would open a session
// per request that nobody ends). It checks no credentials: the program
// mounting it does, before.
func (s *Server) Handler(o HTTPOptions) http.Handler {
	if o.MaxSessions <= 0 {
		o.MaxSessions = MaxSessions
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = SessionIdleTimeout
	}
	stream := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.server }, &sdk.StreamableHTTPOptions{
		Logger: s.log,
		// The gate enforces MaxMessageBytes already; the SDK's own cap stays
		// above it so the gate's JSON-RPC answer is the one a client sees.
		MaxRequestBodyBytes: 2 * MaxMessageBytes,
		SessionTimeout:      o.SessionIdle,
	})
	stateless := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.server }, &sdk.StreamableHTTPOptions{
		Logger:              s.log,
		MaxRequestBodyBytes: 2 * MaxMessageBytes,
		Stateless:           true,
		// Each request is its own session: a client cancels a call by
		// closing its stream, and that must reach the tool.
		PropagateRequestCancellation: true,
	})
	statefulH, statelessH := withCaller(stream, o.Caller), withCaller(stateless, o.Caller)
	table := newSessionTable(o.MaxSessions, s.SessionIDs, s.EndSession, s.log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		version := r.Header.Get(VersionHeader)
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(r.Body, MaxMessageBytes+1))
			if err != nil {
				writeViolation(w, &Violation{Code: CodeParseError, Message: "read body: " + err.Error()}, http.StatusBadRequest)
				return
			}
			if len(body) > MaxMessageBytes {
				writeViolation(w, &Violation{Code: CodeInvalidRequest, Message: "message is over the 1 MiB limit"}, http.StatusRequestEntityTooLarge)
				return
			}
			v, msgVersion := s.gate.Check(body, Session{
				Version: version,
				Missing: r.Header.Get(SessionHeader) == "",
				Headers: &MethodHeaders{Method: r.Header.Get(methodHeader), Name: r.Header.Get(nameHeader)},
			})
			if v != nil {
				writeViolation(w, v, v.HTTPStatus())
				return
			}
			version = msgVersion
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			// Past the gate, a POST of the revisions with sessions and
			// without a session id is an initialize: it opens a session.
			if !IsModern(version) && r.Header.Get(SessionHeader) == "" {
				slot, ok := table.reserve()
				if !ok {
					s.log.Warn("MCP session refused: too many open, each with a request running", "max", o.MaxSessions)
					writeViolation(w, &Violation{Code: CodeTooManySessions, Message: fmt.Sprintf(
						"too many MCP sessions: %d are open, the most this server keeps, and each has a request running; end unused ones (DELETE %s with their %s) or retry once one is idle",
						o.MaxSessions, o.Path, SessionHeader)}, http.StatusServiceUnavailable)
					return
				}
				w = &openRecorder{ResponseWriter: w, opened: slot.open}
				defer func() { slot.release(w.Header().Get(SessionHeader)) }()
			}
		}
		if IsModern(version) {
			statelessH.ServeHTTP(w, r)
			return
		}
		if id := r.Header.Get(SessionHeader); id != "" {
			done, ok := table.begin(id)
			if !ok {
				http.Error(w, "MCP session ended: it was the one idle longest when the session cap was reached; initialize a new session", http.StatusNotFound)
				return
			}
			defer done()
		}
		statefulH.ServeHTTP(w, r)
	})
}

// SessionCount is the number of MCP sessions open.
func (s *Server) SessionCount() int {
	n := 0
	for range s.server.Sessions() {
		n++
	}
	return n
}

// EndSession ends the session of that id, if it is open: its later
// requests answer 404, the transport's "initialize again".
func (s *Server) EndSession(id string) {
	for ss := range s.server.Sessions() {
		if ss.ID() == id {
			_ = ss.Close()
		}
	}
}

// SessionIDs are the ids of the sessions open.
func (s *Server) SessionIDs() map[string]bool {
	ids := map[string]bool{}
	for ss := range s.server.Sessions() {
		ids[ss.ID()] = true
	}
	return ids
}

// CloseSessions ends every session, at the server's end: a client that
// never said DELETE would otherwise hold one (and its goroutines) open.
func (s *Server) CloseSessions() {
	for ss := range s.server.Sessions() {
		_ = ss.Close()
	}
}

func writeViolation(w http.ResponseWriter, v *Violation, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(v.Response())))
	w.WriteHeader(status)
	_, _ = w.Write(v.Response())
}
