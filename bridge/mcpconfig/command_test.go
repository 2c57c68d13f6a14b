package mcpconfig_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/bridge/mcpconfig"
	"github.com/trycua/cua-spacesd/bridge/registry"
)

// defaults are serve's, as bridge/main.go hands them in.
func defaults(exe string) mcpconfig.Defaults {
	return mcpconfig.Defaults{Listen: "127.0.0.1:3210", Path: "/mcp", TokenFileName: "bridge.token", Executable: exe}
}

func run(t *testing.T, d mcpconfig.Defaults, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = mcpconfig.Main(args, d, &out, &errb)
	return code, out.String(), errb.String()
}

// registryWithToken makes a registry directory holding serve's token file,
// sets CUA_HOME to it and returns it with the token.
func registryWithToken(t *testing.T) (home, token string) {
	t.Helper()
	home = t.TempDir()
	raw := make([]byte, 32)
	rand.Read(raw)
	token = hex.EncodeToString(raw)
	if err := os.WriteFile(filepath.Join(home, "bridge.token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CUA_HOME", home)
	return home, token
}

// TestMainNeverPrintsTheTokenUnlessAsked: for every client and form, the
// token appears in no output without --show-token, and with it the config
// carries it where the host sends it.
func TestMainNeverPrintsTheTokenUnlessAsked(t *testing.T) {
	home, token := registryWithToken(t)
	exe := filepath.Join(t.TempDir(), "cua-bridge")
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	d := defaults(exe)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, client := range mcpconfig.Clients() {
		for _, form := range [][]string{nil, {"--http"}, {"--http", "--listen", ":4000"}, {"--http", "--token-file", filepath.Join(home, "bridge.token")}} {
			args := append([]string{"--client", string(client)}, form...)
			code, stdout, stderr := run(t, d, args...)
			if strings.Contains(stdout+stderr, token) {
				t.Fatalf("%v printed the token:\n%s\n%s", args, stdout, stderr)
			}
			if client == mcpconfig.ClaudeDesktop && len(form) > 0 {
				if code != 2 || stdout != "" {
					t.Fatalf("%v: code %d, stdout %q; want 2 and nothing", args, code, stdout)
				}
				continue
			}
			if code != 0 {
				t.Fatalf("%v: code %d: %s", args, code, stderr)
			}
			got := parse(t, t.TempDir(), client, stdout)
			if len(form) == 0 && (got.Command != exe || strings.Join(got.Args, " ") != "mcp --home "+home+" --root "+wd) {
				t.Fatalf("%v: the host runs %q %q, want %q mcp --home %q --root %q", args, got.Command, got.Args, exe, home, wd)
			}
		}
		if client == mcpconfig.ClaudeDesktop {
			continue
		}
		code, stdout, stderr := run(t, d, "--client", string(client), "--http", "--show-token")
		if code != 0 {
			t.Fatalf("%s --show-token: code %d: %s", client, code, stderr)
		}
		if got := parse(t, t.TempDir(), client, stdout); got.Auth != "Bearer "+token || got.URL != "http://127.0.0.1:3210/mcp" {
			t.Fatalf("%s --show-token: the host sends %q to %q", client, got.Auth, got.URL)
		}
		if strings.Contains(stderr, token) {
			t.Fatalf("%s --show-token: the note holds the token: %s", client, stderr)
		}
	}
}

// TestMainNamesThisBinaryAndRegistry: the config names the binary with
// symlinks resolved, and the registry and the tools' roots (the working
// directory unless --root says) as absolute paths, wherever the host
// starts it from.
func TestMainNamesThisBinaryAndRegistry(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real", "cua-bridge")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "cua-bridge")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv("CUA_HOME", "rel-home")
	cases := []struct {
		args      []string
		wantHome  string
		wantRoots []string
	}{
		{nil, filepath.Join(dir, "rel-home"), []string{dir}},
		{[]string{"--home", "other"}, filepath.Join(dir, "other"), []string{dir}},
		{[]string{"--home", "/abs/h", "--root", "work", "--root", "/srv/data"}, "/abs/h", []string{filepath.Join(dir, "work"), "/srv/data"}},
	}
	for _, c := range cases {
		code, stdout, stderr := run(t, defaults(link), append([]string{"--client", "codex"}, c.args...)...)
		if code != 0 {
			t.Fatalf("%v: %d %s", c.args, code, stderr)
		}
		got := parse(t, dir, mcpconfig.Codex, stdout)
		want := []string{"mcp", "--home", c.wantHome}
		for _, r := range c.wantRoots {
			want = append(want, "--root", r)
		}
		if got.Command != real || !slices.Equal(got.Args, want) {
			t.Fatalf("%v: the host runs %q %q, want %q %q", c.args, got.Command, got.Args, real, want)
		}
	}

	// With no Executable given, it is this process's own.
	code, stdout, _ := run(t, defaults(""))
	self, _ := os.Executable()
	self, _ = filepath.EvalSymlinks(self)
	if got := parse(t, dir, mcpconfig.Generic, stdout); code != 0 || got.Command != self {
		t.Fatalf("default: code %d, command %q, want %q", code, got.Command, self)
	}
}

// TestMainURL: the URL is where serve listens, a wildcard address reached
// through loopback of its family.
func TestMainURL(t *testing.T) {
	registryWithToken(t)
	for listen, want := range map[string]string{
		"":                 "http://127.0.0.1:3210/mcp", // serve's default
		"127.0.0.1:4000":   "http://127.0.0.1:4000/mcp",
		":4000":            "http://127.0.0.1:4000/mcp",
		"0.0.0.0:4000":     "http://127.0.0.1:4000/mcp",
		"[::]:4000":        "http://[::1]:4000/mcp",
		"[::1]:4000":       "http://[::1]:4000/mcp",
		"localhost:4000":   "http://localhost:4000/mcp",
		"192.168.1.9:4000": "http://192.168.1.9:4000/mcp",
	} {
		args := []string{"--http"}
		if listen != "" {
			args = append(args, "--listen", listen)
		}
		code, stdout, stderr := run(t, defaults("/bin/sh"), args...)
		if code != 0 {
			t.Fatalf("--listen %q: %d %s", listen, code, stderr)
		}
		if got := parse(t, t.TempDir(), mcpconfig.Generic, stdout).URL; got != want {
			t.Errorf("--listen %q: URL %q, want %q", listen, got, want)
		}
	}
}

func TestMainRefusesBadInput(t *testing.T) {
	home, _ := registryWithToken(t)
	missing := filepath.Join(home, "nope.token")
	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--client", "zed"}, 2, `unknown client "zed"`},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--show-token"}, 2, "only apply with --http"},
		{[]string{"--listen", ":1"}, 2, "only apply with --http"},
		{[]string{"--token-file", missing}, 2, "only apply with --http"},
		{[]string{"--client", "claude-desktop", "--http"}, 2, "hint: drop --http"},
		{[]string{"--http", "--listen", "3210"}, 2, "is not HOST:PORT"},
		{[]string{"--http", "--listen", "127.0.0.1:0"}, 2, "port 0"},
		{[]string{"--http", "--show-token", "--token-file", missing}, 1, "not_found"},
		{[]string{"--no-such-flag"}, 2, "flag provided but not defined"},
	}
	for _, c := range cases {
		code, stdout, stderr := run(t, defaults("/bin/sh"), c.args...)
		if code != c.code || stdout != "" || !strings.Contains(stderr, c.stderr) {
			t.Errorf("%v: code %d, stdout %q, stderr %q; want %d, nothing, %q", c.args, code, stdout, stderr, c.code, c.stderr)
		}
	}
}

// TestMainSaysWhenTheTokenFileIsMissing: the config still comes (the token
// is not needed to write it), with a note on where it will come from.
func TestMainSaysWhenTheTokenFileIsMissing(t *testing.T) {
	t.Setenv("CUA_HOME", t.TempDir())
	code, stdout, stderr := run(t, defaults("/bin/sh"), "--client", "cursor", "--http")
	if code != 0 || stdout == "" || !strings.Contains(stderr, "does not exist yet") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = run(t, defaults("/bin/sh"), "--client", "cursor", "--http", "--token-file", "/nonexistent/t")
	if code != 0 || !strings.Contains(stderr, "needs it to hold the token") {
		t.Fatalf("explicit missing file: code %d, stderr %q", code, stderr)
	}
}

// TestMainRefusesAFileOfSeveralTokens: a token file is read as serve and
// cua-spacesd read theirs (the first line, trimmed), and one that holds more
// than one token is refused, with or without --show-token: the registry's
// tokens.json given as --token-file once became the Bearer value whole,
// every Space's token in it, sent to the bridge by every host.
func TestMainRefusesAFileOfSeveralTokens(t *testing.T) {
	home := t.TempDir()
	t.Setenv("CUA_HOME", home)
	reg, err := registry.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	tokA, tokB := "a-"+hex.EncodeToString([]byte("first space")), "b-"+hex.EncodeToString([]byte("other space"))
	for name, tok := range map[string]string{"a": tokA, "b": tokB} {
		if _, err := reg.Add(t.Context(), name, "http://127.0.0.1:3211", tok); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, content string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		file, why string
	}{
		{filepath.Join(home, registry.TokensFile), "holds JSON"},
		{write("one-line.json", `{"tokens":{"a":"`+tokA+`","b":"`+tokB+`"}}`), "holds JSON"},
		{write("two.token", tokA+"\n"+tokB+"\n"), "holds 2 non-empty lines"},
		{write("blank-first.token", "\n"+tokA+"\n"), "its first line is empty"},
		{write("empty.token", " \n\n"), "is empty"},
	}
	for _, c := range cases {
		for _, show := range []bool{false, true} {
			args := []string{"--client", "cursor", "--http", "--token-file", c.file}
			if show {
				args = append(args, "--show-token")
			}
			code, stdout, stderr := run(t, defaults("/bin/sh"), args...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, "invalid_argument") || !strings.Contains(stderr, c.why) {
				t.Errorf("%v: code %d, stdout %q, stderr %q; want 2, nothing, invalid_argument and %q", args, code, stdout, stderr, c.why)
			}
			if strings.Contains(stdout+stderr, tokA) || strings.Contains(stdout+stderr, tokB) {
				t.Errorf("%v printed a token: %s %s", args, stdout, stderr)
			}
		}
	}
	// One token, with the blanks and line ends editors leave, is that token.
	f := write("ok.token", "  "+tokA+"\r\n\n")
	code, stdout, stderr := run(t, defaults("/bin/sh"), "--client", "generic", "--http", "--token-file", f, "--show-token")
	if got := parse(t, t.TempDir(), mcpconfig.Generic, stdout); code != 0 || got.Auth != "Bearer "+tokA {
		t.Fatalf("one token: code %d, Authorization %q, stderr %q; want %q", code, got.Auth, stderr, "Bearer "+tokA)
	}
}

// TestMainNotesTheRoots: the note names the folders the stdio config lets
// the upload and download tools use and how to choose others, and warns
// when one holds the whole home directory (run from ~, the default root
// would hand an agent every file of the user's). The HTTP form says the
// roots are serve's.
func TestMainNotesTheRoots(t *testing.T) {
	registryWithToken(t)
	home := filepath.Join(t.TempDir(), "u")
	work := filepath.Join(home, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	const how = "run mcp-config again with --root DIR"
	cases := []struct {
		name     string
		cwd      string
		args     []string
		want     []string // in the note
		wantNot  []string
		warnings int
	}{
		{"default in a project", work, nil, []string{"may use " + work + " and nothing outside it", "the directory mcp-config ran in", how}, nil, 0},
		{"default in the home directory", home, nil, []string{"may use " + home, how, "Warning: the root " + home + " is your home directory", "--root ~/work"}, nil, 1},
		{"explicit roots", home, []string{"--root", work, "--root", "/srv"}, []string{"may use " + work + ", /srv (--root)"}, []string{"ran in"}, 0},
		{"the home directory given", work, []string{"--root", home}, []string{"Warning: the root " + home + " is your home directory"}, nil, 1},
		{"above the home directory", work, []string{"--root", filepath.Dir(home)}, []string{"Warning: the root " + filepath.Dir(home) + " holds your home directory (" + home + ")"}, nil, 1},
		{"the whole file system", work, []string{"--root", work, "--root", "/"}, []string{"Warning: the root / is the whole file system"}, nil, 1},
		{"through a symlink", work, []string{"--root", filepath.Join(work, "link")}, []string{"is your home directory"}, nil, 1},
		{"http", home, []string{"--http"}, []string{"the folders `cua-bridge serve` was started with (its --root"}, []string{"Warning", "ran in"}, 0},
	}
	if err := os.Symlink(home, filepath.Join(work, "link")); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(c.cwd)
			code, stdout, stderr := run(t, defaults("/bin/sh"), append([]string{"--client", "codex"}, c.args...)...)
			if code != 0 || stdout == "" {
				t.Fatalf("code %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("the note lacks %q:\n%s", w, stderr)
				}
			}
			for _, w := range c.wantNot {
				if strings.Contains(stderr, w) {
					t.Errorf("the note holds %q:\n%s", w, stderr)
				}
			}
			if n := strings.Count(stderr, "Warning:"); n != c.warnings {
				t.Errorf("%d warnings, want %d:\n%s", n, c.warnings, stderr)
			}
		})
	}
}

// TestClaudeCodeShowTokenKeepsItOutOfTheLine: with --show-token, the
// claude-code line reads the token from its file as it runs, so that the
// token lands in Claude Code's config but not in the shell's history; a
// file $(cat) would not read back exactly gets the token written in, with
// a warning.
func TestClaudeCodeShowTokenKeepsItOutOfTheLine(t *testing.T) {
	for _, c := range []struct {
		name, dir, content string
		exact              bool
	}{
		{"serve's file", "plain", "%s\n", true},
		{"awkward folder", "it's \"a\" $(touch pwned) `x` *", "%s\n", true},
		{"no final newline", "plain", "%s", true},
		{"blanks around", "plain", "  %s \r\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			token := "tok-" + hex.EncodeToString([]byte(c.name))
			home := filepath.Join(t.TempDir(), c.dir)
			if err := os.MkdirAll(home, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(home, "bridge.token"), []byte(fmt.Sprintf(c.content, token)), 0o600); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := run(t, defaults("/bin/sh"), "--client", "claude-code", "--http", "--show-token", "--home", home)
			if code != 0 {
				t.Fatalf("code %d: %s", code, stderr)
			}
			dir := t.TempDir()
			if got := parse(t, dir, mcpconfig.ClaudeCode, stdout); got.Auth != "Bearer "+token {
				t.Fatalf("Claude Code gets Authorization %q, want %q, from:\n%s", got.Auth, "Bearer "+token, stdout)
			}
			if ents, _ := os.ReadDir(dir); len(ents) > 0 {
				t.Fatalf("the shell ran part of a path: %v", ents)
			}
			if strings.Contains(stderr, token) {
				t.Fatalf("the note holds the token: %s", stderr)
			}
			if c.exact {
				if strings.Contains(stdout, token) || !strings.Contains(stderr, "stays out of the line and your shell's history") {
					t.Fatalf("the line holds the token, or the note does not say why it does not:\n%s%s", stdout, stderr)
				}
			} else if !strings.Contains(stderr, "Warning: this line holds the token itself") {
				t.Fatalf("no warning that the line holds the token:\n%s", stderr)
			}
		})
	}
}
