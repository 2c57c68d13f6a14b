package mcp_test

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// add_space takes an https Space with its pinned fingerprint or a CA file,
// and the tools reach it; a wrong pin is refused and nothing registered.
func TestAddSpaceOverTLS(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	ca := tlstest.NewCA(t)
	cert := ca.Issue(t, "127.0.0.1")
	fp := api.CertFingerprint(cert.Certificate[0])
	d := spacesdtest.Start(t, spacesdtest.Options{
		TLS:       server.NewTLSConfig(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }),
		ClientTLS: client.TLS{Fingerprint: fp},
	})
	if r := call(t, cs, "add_space", map[string]any{"url": d.URL, "token": d.Token, "name": "bad",
		"fingerprint": api.CertFingerprint([]byte("other"))}); !r.IsError || !strings.Contains(text(r), "not the pinned") {
		t.Fatalf("add_space with a wrong pin: %s", text(r))
	}
	for name, args := range map[string]map[string]any{
		"pinned": {"fingerprint": fp},
		"byca":   {"ca_file": ca.WriteCA(t, t.TempDir())},
	} {
		args["url"], args["token"], args["name"] = d.URL, d.Token, name
		if r := call(t, cs, "add_space", args); r.IsError {
			t.Fatalf("add_space %s: %s", name, text(r))
		}
		if r := call(t, cs, "space_bash", map[string]any{"space": name, "command": "echo tls-ok"}); r.IsError || !strings.Contains(text(r), "tls-ok") {
			t.Fatalf("space_bash on %s: %s", name, text(r))
		}
		// The MCP hop to the daemon's /mcp goes over the same pinned TLS.
		if r := call(t, cs, "call_tool", map[string]any{"space": name, "tool": "space_bash", "arguments": map[string]any{"command": "echo mcp-tls-ok"}}); r.IsError || !strings.Contains(text(r), "mcp-tls-ok") {
			t.Fatalf("call_tool on %s: %s", name, text(r))
		}
	}
	if _, err := e.reg.Resolve("bad"); api.KindOf(err) != api.KindNotFound {
		t.Fatalf("the refused Space was registered: %v", err)
	}
}
