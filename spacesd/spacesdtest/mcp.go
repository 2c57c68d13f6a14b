package spacesdtest

import (
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/api"
)

// MCPClient connects the Go SDK's client to the daemon's in-space MCP
// (/mcp) with its token, closed at the end of the test.
func (d *Daemon) MCPClient(t testing.TB, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearer{d.Token}}
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: d.URL + api.PathMCP, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// bearer adds the token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
