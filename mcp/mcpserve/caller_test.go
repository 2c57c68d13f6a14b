package mcpserve_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcp "github.com/trycua/cua-spacesd/mcp/mcpserve"
)

type callerKey struct{}

// headerTransport sets the request headers h on every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// HTTPOptions.Caller reaches each tool call as Call.Caller, and the call
// sees the Authorization its client sent (a token, or none), never the
// stand-in the SDK's middleware is shown; with no Caller, Call.Caller is
// nil.
func TestCallerReachesToolCalls(t *testing.T) {
	t.Parallel()
	srv, err := mcp.New(mcp.Config{Name: "t", Tools: []*mcp.Tool{{
		Name: "who", Schema: &jsonschema.Schema{Type: "object"},
		Run: func(_ context.Context, c *mcp.Call) (*mcp.Result, error) {
			return &mcp.Result{Text: fmt.Sprintf("caller=%v authorization=%q", c.Caller, c.Header.Get("Authorization"))}, nil
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	withCaller := srv.Handler(mcp.HTTPOptions{Path: "/mcp", Caller: func(r *http.Request) (string, any) {
		who, _ := r.Context().Value(callerKey{}).(string)
		return who, who
	}})
	// The program in front authenticates and says who called (here a
	// header stands in for its check).
	front := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		withCaller.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, r.Header.Get("X-Who"))))
	})
	plain := srv.Handler(mcp.HTTPOptions{Path: "/mcp"})
	for _, c := range []struct {
		name    string
		handler http.Handler
		headers headerTransport
		want    string
	}{
		{"a token", front, headerTransport{"Authorization": "Bearer tok", "X-Who": "bob"}, `caller=bob authorization="Bearer tok"`},
		{"no token", front, headerTransport{"X-Who": "eve"}, `caller=eve authorization=""`},
		{"no Caller", plain, headerTransport{"Authorization": "Bearer tok"}, `caller=<nil> authorization="Bearer tok"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			hs := httptest.NewServer(c.handler)
			defer hs.Close()
			cl := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
			cs, err := cl.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: &http.Client{Transport: c.headers}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "who", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(*sdk.TextContent).Text; got != c.want {
				t.Fatalf("the tool saw %s, want %s", got, c.want)
			}
		})
	}
}
