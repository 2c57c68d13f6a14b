package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/registry"
)

// The tools' roots: --root flags, else CUA_BRIDGE_ROOTS, else the working
// directory.
func TestHostRoots(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	t.Setenv(envRoots, a+string(os.PathListSeparator)+b)
	if got, _ := hostRoots(rootsFlag{b}); !slices.Equal(got, []string{b}) {
		t.Fatalf("flags: %v", got)
	}
	if got, _ := hostRoots(nil); !slices.Equal(got, []string{a, b}) {
		t.Fatalf("env: %v", got)
	}
	t.Setenv(envRoots, "")
	wd, _ := os.Getwd()
	if got, _ := hostRoots(nil); !slices.Equal(got, []string{wd}) {
		t.Fatalf("default: %v, want %s", got, wd)
	}
}

// A root inside $CUA_HOME would hand the registry's tokens to the tools:
// the bridge refuses to start with one, and says why.
func TestMCPRefusesARootInsideItsHome(t *testing.T) {
	home := t.TempDir()
	inside := filepath.Join(home, "sub")
	if err := os.Mkdir(inside, 0o700); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := run(t.Context(), []string{"mcp", "--home", home, "--root", inside}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "inside $CUA_HOME") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// serve reads its token file as mcp-config does: the first line, and a file
// of several tokens (here the registry's tokens.json) is refused, not taken
// whole as the token every client must then send.
func TestServeRefusesAFileOfSeveralTokens(t *testing.T) {
	home := t.TempDir()
	reg, err := registry.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Add(t.Context(), "a", "http://127.0.0.1:3211", "space-a-token"); err != nil {
		t.Fatal(err)
	}
	tok, err := loadOrCreateToken(filepath.Join(home, registry.TokensFile), false)
	if api.KindOf(err) != api.KindInvalidArgument || tok != "" || !strings.Contains(err.Error(), "holds JSON") {
		t.Fatalf("tokens.json as serve's token file: %q, %v; want invalid_argument naming JSON", tok, err)
	}
	one := filepath.Join(t.TempDir(), "bridge.token")
	if err := os.WriteFile(one, []byte("serve-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err := loadOrCreateToken(one, false); err != nil || tok != "serve-token" {
		t.Fatalf("one token: %q, %v", tok, err)
	}
}

// `cua-bridge --help` names every flag of mcp-config (as `mcp-config --help`
// lists them, a line each) and points to that help.
func TestUsageNamesEveryMCPConfigFlag(t *testing.T) {
	var help, stderr bytes.Buffer
	if code := run(t.Context(), []string{"mcp-config", "--help"}, strings.NewReader(""), &help, &stderr); code != 0 {
		t.Fatalf("mcp-config --help: exit %d: %s", code, stderr.String())
	}
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^  (--[a-z-]+)`).FindAllStringSubmatch(help.String(), -1) {
		flags = append(flags, m[1])
	}
	if len(flags) < 7 {
		t.Fatalf("mcp-config --help lists %q:\n%s", flags, help.String())
	}
	var top bytes.Buffer
	if code := run(t.Context(), []string{"--help"}, strings.NewReader(""), &top, &stderr); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	u := top.String()
	i, j := strings.Index(u, "  mcp-config "), strings.Index(u, "Human CLI:")
	if i < 0 || j < i {
		t.Fatalf("no mcp-config entry in:\n%s", u)
	}
	entry := u[i:j]
	for _, f := range flags {
		if !regexp.MustCompile(`[\s\[]` + regexp.QuoteMeta(f) + `[\s\]]`).MatchString(entry) {
			t.Errorf("cua-bridge --help does not name mcp-config's %s:\n%s", f, entry)
		}
	}
	if !strings.Contains(entry, "cua-bridge mcp-config --help") {
		t.Errorf("cua-bridge --help does not point to mcp-config --help:\n%s", entry)
	}
}
