package client

import (
	"net/http"

	"github.com/trycua/cua-spacesd/api"
)

// MCPEndpoint is the URL of the daemon's MCP endpoint (api.PathMCP).
func (c *Client) MCPEndpoint() string { return c.url(api.PathMCP, nil) }

// MCPHTTPClient is an HTTP client that reaches the daemon as this client
// does (its dialer) and carries its token, for an MCP client of the
// daemon's /mcp: MCP is a protocol this package does not speak itself.
func (c *Client) MCPHTTPClient() *http.Client {
	return &http.Client{Transport: bearerTransport{base: c.http.Transport, token: c.token}}
}

// bearerTransport adds the token to every request.
type bearerTransport struct {
	base  http.RoundTripper
	token string
}

func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+t.token)
	}
	return t.base.RoundTrip(r)
}
