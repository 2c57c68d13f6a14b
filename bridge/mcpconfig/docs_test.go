package mcpconfig_test

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/bridge/mcpconfig"
)

// The paths the examples of docs/tools.md show.
const (
	docsBridge = "/usr/local/bin/cua-bridge"
	docsHome   = "/home/you/.cua"
)

// TestDocsShowWhatIsRendered: every config mcp-config prints (stdio, and
// HTTP without the token, and claude-code's --show-token line) appears in docs/tools.md's "Connecting an MCP
// host", so the documented shapes are the real ones: JSON compared as
// values, TOML blocks and shell lines as text.
func TestDocsShowWhatIsRendered(t *testing.T) {
	doc, err := os.ReadFile("../../docs/tools.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, "## Connecting an MCP host"), strings.Index(s, "\n## Tools")
	if i < 0 || j < i {
		t.Fatal(`docs/tools.md lacks the "Connecting an MCP host" section before "Tools"`)
	}
	var jsonValues []any
	var tomlBlocks, shellLines []string
	for _, m := range regexp.MustCompile("(?s)```(json|toml|sh)\n(.*?)```").FindAllStringSubmatch(s[i:j], -1) {
		switch m[1] {
		case "json":
			dec := json.NewDecoder(strings.NewReader(m[2]))
			for {
				var v any
				if err := dec.Decode(&v); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatalf("a JSON example does not parse: %v\n%s", err, m[2])
				}
				jsonValues = append(jsonValues, v)
			}
		case "toml":
			tomlBlocks = append(tomlBlocks, m[2])
		case "sh":
			shellLines = append(shellLines, strings.Split(m[2], "\n")...)
		}
	}
	for _, s := range []mcpconfig.Server{
		{Command: docsBridge, Home: docsHome},
		{URL: "http://127.0.0.1:3210/mcp", TokenFile: docsHome + "/bridge.token"},
	} {
		for _, client := range mcpconfig.Clients() {
			cfg, err := mcpconfig.Render(client, s)
			if client == mcpconfig.ClaudeDesktop && s.URL != "" {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			found := false
			switch client {
			case mcpconfig.ClaudeCode:
				found = slices.Contains(shellLines, strings.TrimSuffix(cfg.Text, "\n"))
			case mcpconfig.Codex:
				found = slices.Contains(tomlBlocks, cfg.Text)
			default:
				var v any
				if err := json.Unmarshal([]byte(cfg.Text), &v); err != nil {
					t.Fatal(err)
				}
				found = slices.ContainsFunc(jsonValues, func(d any) bool { return reflect.DeepEqual(d, v) })
			}
			if !found {
				t.Errorf("docs/tools.md does not show the %s config:\n%s", client, cfg.Text)
			}
		}
	}
	// claude-code's --show-token line reads the token from its file, so it
	// holds no secret and is shown as well.
	cfg, err := mcpconfig.Render(mcpconfig.ClaudeCode, mcpconfig.Server{URL: "http://127.0.0.1:3210/mcp", Token: "secret",
		TokenFile: docsHome + "/bridge.token", TokenFileExact: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(shellLines, strings.TrimSuffix(cfg.Text, "\n")) {
		t.Errorf("docs/tools.md does not show claude-code's --show-token line:\n%s", cfg.Text)
	}
}
