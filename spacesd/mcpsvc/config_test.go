package mcpsvc_test

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/mcpsvc"
)

func TestParseConfig(t *testing.T) {
	c, err := mcpsvc.ParseConfig([]byte(`{"mcpServers": {
		"notes": {"command": "/usr/bin/notes-mcp", "args": ["--stdio"], "env": {"A": "1"}, "cwd": "/tmp", "idleTimeoutSeconds": 30},
		"web": {"type": "http", "url": "http://127.0.0.1:8931/mcp", "headers": {"Authorization": "Bearer x"}, "initTimeoutSeconds": 2.5}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Services) != 2 {
		t.Fatalf("services %+v", c.Services)
	}
	notes, web := c.Services[0], c.Services[1]
	if notes.Name != "notes" || notes.Transport != mcpsvc.TransportStdio || notes.Args[0] != "--stdio" || notes.Env["A"] != "1" ||
		notes.IdleTimeout != 30*time.Second || notes.InitTimeout != mcpsvc.DefaultInitTimeout {
		t.Errorf("notes %+v", notes)
	}
	if web.Name != "web" || web.Transport != mcpsvc.TransportHTTP || web.Headers["Authorization"] != "Bearer x" ||
		web.InitTimeout != 2500*time.Millisecond || web.IdleTimeout != mcpsvc.DefaultIdleTimeout {
		t.Errorf("web %+v", web)
	}
}

// Each refusal names what is wrong.
func TestParseConfigRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"not JSON", `mcpServers:`, "not a services file"},
		{"two values", `{"mcpServers":{}} {}`, "more than one JSON value"},
		{"no servers", `{}`, `no "mcpServers"`},
		{"unknown top key", `{"mcpServers":{},"extra":1}`, `unknown field "extra"`},
		{"unknown service key", `{"mcpServers":{"a":{"command":"x","disabled":true}}}`, `unknown field "disabled"`},
		{"neither", `{"mcpServers":{"a":{}}}`, "neither command"},
		{"both", `{"mcpServers":{"a":{"command":"x","url":"http://127.0.0.1/"}}}`, "both command and url"},
		{"reserved name", `{"mcpServers":{"spacesd":{"command":"x"}}}`, "the daemon's own service"},
		{"bad name", `{"mcpServers":{"a b":{"command":"x"}}}`, "letters, digits"},
		{"long name", `{"mcpServers":{"` + strings.Repeat("a", 65) + `":{"command":"x"}}}`, "1 to 64"},
		{"twice", `{"mcpServers":{"a":{"command":"x"},"a":{"command":"y"}}}`, `service "a" is declared twice`},
		{"top twice", `{"mcpServers":{"a":{"command":"x"}},"mcpServers":{"b":{"command":"y"}}}`, `"mcpServers" is given twice`},
		{"case", `{"McpServers":{"a":{"command":"x"}}}`, `spelled so`},
		{"remote url", `{"mcpServers":{"a":{"url":"http://10.0.0.1:80/mcp"}}}`, "loopback"},
		{"remote name", `{"mcpServers":{"a":{"url":"http://example.com/mcp"}}}`, "loopback"},
		{"https", `{"mcpServers":{"a":{"url":"https://127.0.0.1/mcp"}}}`, "want http://"},
		{"credentials", `{"mcpServers":{"a":{"url":"http://u:p@127.0.0.1/mcp"}}}`, "without credentials"},
		{"header name", `{"mcpServers":{"a":{"url":"http://127.0.0.1/","headers":{"a b":"x"}}}}`, "header"},
		{"header value", `{"mcpServers":{"a":{"url":"http://127.0.0.1/","headers":{"X":"a\r\nB: c"}}}}`, "header"},
		{"args on url", `{"mcpServers":{"a":{"url":"http://127.0.0.1/","args":["x"]}}}`, "for a command service"},
		{"headers on command", `{"mcpServers":{"a":{"command":"x","headers":{"X":"y"}}}}`, "for a url service"},
		{"relative cwd", `{"mcpServers":{"a":{"command":"x","cwd":"tmp"}}}`, "absolute"},
		{"env name", `{"mcpServers":{"a":{"command":"x","env":{"A=B":"1"}}}}`, "env"},
		{"NUL", `{"mcpServers":{"a":{"command":"x\u0000y"}}}`, "NUL"},
		{"type", `{"mcpServers":{"a":{"type":"sse","url":"http://127.0.0.1/"}}}`, `type "sse"`},
		{"type mismatch", `{"mcpServers":{"a":{"type":"http","command":"x"}}}`, `type "http"`},
		{"zero timeout", `{"mcpServers":{"a":{"command":"x","initTimeoutSeconds":0}}}`, "initTimeoutSeconds"},
		{"long timeout", `{"mcpServers":{"a":{"command":"x","idleTimeoutSeconds":1e9}}}`, "idleTimeoutSeconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mcpsvc.ParseConfig([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseConfig(%s) = %v, want an error naming %q", tc.in, err, tc.want)
			}
		})
	}
	many := `{"mcpServers":{`
	for i := range mcpsvc.MaxServices + 1 {
		if i > 0 {
			many += ","
		}
		many += `"s` + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":{"command":"x"}`
	}
	if _, err := mcpsvc.ParseConfig([]byte(many + "}}")); err == nil || !strings.Contains(err.Error(), "more than the") {
		t.Fatalf("too many services: %v", err)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	if _, err := mcpsvc.LoadConfig(filepath.Join(dir, "missing.json")); api.KindOf(err) != api.KindInvalidArgument || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("missing file: %v", err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, mcpsvc.MaxConfigBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := mcpsvc.LoadConfig(big); api.KindOf(err) != api.KindInvalidArgument || !strings.Contains(err.Error(), "over") {
		t.Fatalf("big file: %v", err)
	}
	// The example shipped with the packaging is a valid file.
	c, err := mcpsvc.LoadConfig("../../packaging/mcp-services.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Services) == 0 {
		t.Fatal("the example declares no service")
	}
}

// FuzzParseConfig: the parser never panics, and whatever it accepts is a
// set of services the supervisor can run as they are: valid unique names,
// one transport each, loopback URLs, timeouts within their bounds.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"mcpServers":{"a":{"command":"x","args":["1"],"env":{"K":"V"},"cwd":"/","idleTimeoutSeconds":1}}}`))
	f.Add([]byte(`{"mcpServers":{"b":{"type":"http","url":"http://[::1]:9/mcp","headers":{"X-A":"b"},"initTimeoutSeconds":300}}}`))
	f.Add([]byte(`{"mcpServers":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := mcpsvc.ParseConfig(b)
		if err != nil {
			if c != nil {
				t.Fatal("a config and an error")
			}
			return
		}
		if len(c.Services) > mcpsvc.MaxServices {
			t.Fatalf("%d services accepted", len(c.Services))
		}
		seen := map[string]bool{}
		for _, s := range c.Services {
			if s.Name == "" || s.Name == "spacesd" || seen[s.Name] {
				t.Fatalf("name %q accepted (seen before: %v)", s.Name, seen[s.Name])
			}
			seen[s.Name] = true
			if s.InitTimeout <= 0 || s.InitTimeout > mcpsvc.MaxInitTimeout || s.IdleTimeout <= 0 || s.IdleTimeout > mcpsvc.MaxIdleTimeout {
				t.Fatalf("%s: timeouts %v %v", s.Name, s.InitTimeout, s.IdleTimeout)
			}
			switch s.Transport {
			case mcpsvc.TransportStdio:
				if s.Command == "" || s.URL != "" {
					t.Fatalf("%s: stdio with command %q url %q", s.Name, s.Command, s.URL)
				}
			case mcpsvc.TransportHTTP:
				u, err := url.Parse(s.URL)
				if err != nil || s.Command != "" || u.Scheme != "http" {
					t.Fatalf("%s: http service %q: %v", s.Name, s.URL, err)
				}
				if ip := net.ParseIP(u.Hostname()); !(ip != nil && ip.IsLoopback() || strings.EqualFold(u.Hostname(), "localhost")) {
					t.Fatalf("%s: %q is not loopback", s.Name, s.URL)
				}
			default:
				t.Fatalf("%s: transport %q", s.Name, s.Transport)
			}
		}
	})
}
