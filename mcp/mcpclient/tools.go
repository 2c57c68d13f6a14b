package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ConnectIO initializes a session over newline-delimited JSON: r is the
// server's stdout, w its stdin.
func ConnectIO(ctx context.Context, r io.ReadCloser, w io.WriteCloser, o Options) (*Session, error) {
	return Connect(ctx, &sdk.IOTransport{Reader: r, Writer: w, MaxLineLength: MaxMessageBytes}, o, nil)
}

// ConnectHTTP initializes a session with the streamable HTTP server at
// endpoint; hc carries the requests (and whatever credentials its
// transport adds). Every request after initialize names the agreed
// revision in Mcp-Protocol-Version, as 2025-06-18 and later ask.
func ConnectHTTP(ctx context.Context, endpoint string, hc *http.Client, o Options) (*Session, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	vt := &versionTransport{base: hc.Transport}
	if vt.base == nil {
		vt.base = http.DefaultTransport
	}
	t := &sdk.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: vt, CheckRedirect: hc.CheckRedirect, Jar: hc.Jar},
		// Only answers to our own requests matter (their progress comes on
		// their own streams): no standing GET stream to keep open.
		DisableStandaloneSSE: true,
		MaxEventSize:         MaxMessageBytes,
	}
	return Connect(ctx, t, o, vt.set)
}

// versionHeader names a request's revision in streamable HTTP.
const versionHeader = "Mcp-Protocol-Version"

// versionTransport sets Mcp-Protocol-Version to the revision agreed.
type versionTransport struct {
	base    http.RoundTripper
	mu      sync.Mutex
	version string
}

func (t *versionTransport) set(v string) {
	t.mu.Lock()
	t.version = v
	t.mu.Unlock()
}

func (t *versionTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	v := t.version
	t.mu.Unlock()
	// The SDK's transport names a revision of its own (its newest) when
	// its client did not initialize the session, as here: the header is
	// ours to set. Before initialize is answered there is none to name
	// (initialize carries its revision in its params).
	if r.Header.Get(versionHeader) != v {
		r = r.Clone(r.Context())
		if v == "" {
			r.Header.Del(versionHeader)
		} else {
			r.Header.Set(versionHeader, v)
		}
	}
	return t.base.RoundTrip(r)
}

// ListTools lists every tool of the server, each as the server described it.
func (s *Session) ListTools(ctx context.Context) ([]json.RawMessage, error) {
	var tools []json.RawMessage
	cursor := ""
	for range maxToolPages {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, err := s.Call(ctx, "tools/list", params, nil)
		if err != nil {
			return nil, err
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		tools = append(tools, page.Tools...)
		if page.NextCursor == "" {
			return tools, nil
		}
		cursor = page.NextCursor
	}
	return nil, fmt.Errorf("tools/list: still more after %d pages", maxToolPages)
}

// CallTool calls a tool and answers its result as the server sent it.
// progress, when set, hears the call's progress notifications.
func (s *Session) CallTool(ctx context.Context, name string, args json.RawMessage, progress func(Progress)) (json.RawMessage, error) {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	return s.Call(ctx, "tools/call", map[string]any{"name": name, "arguments": args}, progress)
}
