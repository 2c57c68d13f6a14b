package mcpsvc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/mcptest"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// relayedURL is the daemon's base URL on a principal's connections: any
// name does, nothing is dialled.
const relayedURL = "http://relay"

// principalHTTP is an HTTP client whose every connection the daemon serves
// as p's: what the relay service does with a relayed stream whose grant
// held (a net.Pipe stands in for the stream).
func principalHTTP(t *testing.T, d *spacesdtest.Daemon, p server.Principal) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		mine, theirs := net.Pipe()
		if err := d.Server.ServeConn(theirs, p); err != nil {
			return nil, err
		}
		return mine, nil
	}}}
}

// relayedMCP connects the Go SDK's client to /mcp as p.
func relayedMCP(t *testing.T, d *spacesdtest.Daemon, p server.Principal) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "relayed", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: relayedURL + api.PathMCP, HTTPClient: principalHTTP(t, d, p)}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func person(name string, role server.Role) server.Principal {
	return server.Principal{Person: "u-" + name, PersonName: name, Role: role, Grant: "g-" + name, Via: server.ViaRelay}
}

// A caller its connection brought (a person through the relay, with no
// token) uses the built-in tools as themselves: an editor's and an
// owner's command runs, a viewer never opens a session; the token's
// holder is served as before.
func TestRelayedCallerUsesBuiltinTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		name    string
		connect func(t *testing.T) (*sdk.ClientSession, error)
		works   bool
	}{
		{"editor", func(t *testing.T) (*sdk.ClientSession, error) {
			return relayedMCP(t, e.d, person("bob", server.RoleEditor))
		}, true},
		{"owner through the relay", func(t *testing.T) (*sdk.ClientSession, error) {
			return relayedMCP(t, e.d, person("alice", server.RoleOwner))
		}, true},
		{"viewer", func(t *testing.T) (*sdk.ClientSession, error) {
			return relayedMCP(t, e.d, person("vera", server.RoleViewer))
		}, false},
		{"token", func(t *testing.T) (*sdk.ClientSession, error) { return e.client(t, nil), nil }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs, err := c.connect(t)
			if !c.works {
				if err == nil {
					t.Fatal("a viewer opened an MCP session")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res := call(t, cs, "space_bash", map[string]any{"command": "echo ran-$((6*7))"})
			if res.IsError || !strings.Contains(mcptest.Text(res), "ran-42") {
				t.Fatalf("space_bash: %s (kind %s)", mcptest.Text(res), kindOf(res))
			}
		})
	}
}

// rawPost sends one JSON-RPC message to /mcp as hc's caller, in session
// sid ("" for none) of the 2025-06-18 revision, which has sessions.
func rawPost(ctx context.Context, hc *http.Client, sid, body string) (int, string, []byte, error) {
	return mcptest.PostWith(ctx, hc, relayedURL+api.PathMCP, "", sid, []byte(body))
}

// rawSession opens a 2025-06-18 session as hc's caller.
func rawSession(t *testing.T, hc *http.Client) string {
	t.Helper()
	status, sid, body, err := rawPost(t.Context(), hc, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if err != nil || status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s %v", status, body, err)
	}
	_, _, _, _ = rawPost(t.Context(), hc, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

const ping = `{"jsonrpc":"2.0","id":5,"method":"ping"}`

// A kick of the person (an unshare, a role lowered: the relay's Kick)
// ends their MCP tool call in flight and kills what it ran, over either
// revision: the modern one, whose calls are requests of their own, and
// 2025-06-18, whose sessions then end too. Another person's session lives
// on, and may not use theirs.
func TestKickEndsRelayedToolCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bobHTTP, edHTTP := principalHTTP(t, e.d, person("bob", server.RoleEditor)), principalHTTP(t, e.d, person("ed", server.RoleEditor))
	bash := func(cmd string) map[string]any { return map[string]any{"command": cmd, "timeout": 900} }
	for _, c := range []struct {
		name string
		// call calls space_bash as bob and answers whether it failed, and
		// how (a transport's error, or the tool's); after returns the
		// checks once bob was kicked.
		start func(t *testing.T, args map[string]any) (call func() (failed bool, how string), after func(t *testing.T))
	}{
		{"modern revision", func(t *testing.T, args map[string]any) (func() (bool, string), func(*testing.T)) {
			bob, err := relayedMCP(t, e.d, person("bob", server.RoleEditor))
			if err != nil {
				t.Fatal(err)
			}
			return func() (bool, string) {
				res, err := bob.CallTool(context.Background(), &sdk.CallToolParams{Name: "space_bash", Arguments: args})
				if err != nil {
					return true, err.Error()
				}
				return res.IsError, mcptest.Text(res)
			}, func(*testing.T) {}
		}},
		{"2025-06-18 session", func(t *testing.T, args map[string]any) (func() (bool, string), func(*testing.T)) {
			sid, edSid := rawSession(t, bobHTTP), rawSession(t, edHTTP)
			if status, _, body, _ := rawPost(t.Context(), edHTTP, sid, ping); status != http.StatusForbidden {
				t.Fatalf("ed in bob's session: %d %s, want 403", status, body)
			}
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "space_bash", "arguments": args}})
			return func() (bool, string) {
					status, _, body, err := rawPost(context.Background(), bobHTTP, sid, string(b))
					if err != nil {
						return true, err.Error()
					}
					return status != http.StatusOK || !strings.Contains(string(body), `"exit_code":0`), string(body)
				}, func(t *testing.T) {
					if status, _, body, _ := rawPost(t.Context(), bobHTTP, sid, ping); status != http.StatusNotFound {
						t.Errorf("bob's session after his kick: %d %s, want 404", status, body)
					}
					if status, _, body, _ := rawPost(t.Context(), edHTTP, edSid, ping); status != http.StatusOK {
						t.Errorf("ed's session after bob's kick: %d %s", status, body)
					}
				}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			call, after := c.start(t, bash(fmt.Sprintf("echo $$ > %s; exec sleep 600", pidFile)))
			type outcome struct {
				failed bool
				how    string
			}
			done := make(chan outcome, 1)
			go func() { f, how := call(); done <- outcome{f, how} }()
			var pid int
			eventually(t, "the command started", func() bool {
				b, _ := os.ReadFile(pidFile)
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				return pid > 0
			})
			if n := e.d.Server.Kick(func(p string, _ server.Role) bool { return p == "u-bob" }); n == 0 {
				t.Fatal("the kick ended nothing bob held")
			}
			select {
			case o := <-done:
				if !o.failed {
					t.Fatalf("bob's call after his kick: %s, want a failure", o.how)
				}
			case <-time.After(time.Minute):
				t.Fatal("bob's call in flight outlived his kick")
			}
			eventually(t, "the command was killed", func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
			after(t)
		})
	}
}
