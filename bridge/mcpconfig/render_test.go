package mcpconfig_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/mcpconfig"
)

// view is what a host takes from its config, whatever the format: the
// command it runs, or the URL and Authorization header it sends.
type view struct {
	Type    string
	Command string
	Args    []string
	URL     string
	Auth    string // the Authorization header as written in the config
	// TokenEnv is Codex's bearer_token_env_var.
	TokenEnv string
	// Prompted lists the ids of VS Code's password inputs.
	Prompted []string
}

// parse reads text as client's host does: JSON, TOML, or a shell line split
// by a real POSIX shell. It fails the test when the text does not parse or
// holds anything the host would not expect.
func parse(t testing.TB, dir string, client mcpconfig.Client, text string) view {
	t.Helper()
	switch client {
	case mcpconfig.ClaudeCode:
		return parseClaudeLine(t, shellWords(t, dir, text))
	case mcpconfig.Codex:
		return parseCodex(t, text)
	default:
		return parseJSON(t, client, text)
	}
}

// shellWords runs line with sh, `claude` being a function that prints its
// argv NUL-separated: exactly the words Claude Code would receive. It runs
// in dir, so that a quoting bug that executes part of a path shows there.
func shellWords(t testing.TB, dir, line string) []string {
	t.Helper()
	if !strings.HasSuffix(line, "\n") {
		t.Fatalf("not a line: %q", line)
	}
	cmd := exec.Command("sh", "-c", `claude() { printf '%s\0' claude "$@"; }
`+line)
	cmd.Dir = dir
	// No CUA_BRIDGE_TOKEN here: were ${CUA_BRIDGE_TOKEN} expanded by the
	// shell, it would come out empty and the comparison fail.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("sh -c %q: %v %s", line, err, stderr.String())
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// parseClaudeLine reads `claude mcp add` arguments: the fixed words this
// package writes, checked exactly, so that no option lands after the name
// where Claude Code's variadic -e/-H would swallow it.
func parseClaudeLine(t testing.TB, argv []string) view {
	t.Helper()
	head := []string{"claude", "mcp", "add", "--transport"}
	if len(argv) < 8 || !slices.Equal(argv[:4], head) || argv[5] != "--scope" || argv[6] != "user" || argv[7] != mcpconfig.ServerName {
		t.Fatalf("argv %q does not start with claude mcp add --transport T --scope user %s", argv, mcpconfig.ServerName)
	}
	switch rest := argv[8:]; argv[4] {
	case "stdio":
		if len(rest) < 2 || rest[0] != "--" {
			t.Fatalf("stdio argv %q: want -- COMMAND ARGS... after the name", argv)
		}
		return view{Type: "stdio", Command: rest[1], Args: rest[2:]}
	case "http":
		if len(rest) != 3 || rest[1] != "--header" {
			t.Fatalf("http argv %q: want URL --header H after the name", argv)
		}
		auth, ok := strings.CutPrefix(rest[2], "Authorization: ")
		if !ok {
			t.Fatalf("header %q is not Authorization", rest[2])
		}
		return view{Type: "http", URL: rest[0], Auth: auth}
	}
	t.Fatalf("transport %q", argv[4])
	return view{}
}

type jsonEntry struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

type jsonInput struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Description string `json:"description"`
	Password    bool   `json:"password"`
}

func parseJSON(t testing.TB, client mcpconfig.Client, text string) view {
	t.Helper()
	var doc struct {
		MCPServers map[string]jsonEntry `json:"mcpServers"`
		Servers    map[string]jsonEntry `json:"servers"`
		Inputs     []jsonInput          `json:"inputs"`
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%s: not the expected JSON: %v\n%s", client, err, text)
	}
	if dec.More() {
		t.Fatalf("%s: more than one JSON value:\n%s", client, text)
	}
	servers := doc.MCPServers
	if client == mcpconfig.VSCode {
		// VS Code's file has "servers", and no "mcpServers".
		if doc.MCPServers != nil {
			t.Fatalf("vscode config has mcpServers:\n%s", text)
		}
		servers = doc.Servers
	} else if doc.Servers != nil || doc.Inputs != nil {
		t.Fatalf("%s config has VS Code's keys:\n%s", client, text)
	}
	e, ok := servers[mcpconfig.ServerName]
	if len(servers) != 1 || !ok {
		t.Fatalf("%s: want one server %q, got %v", client, mcpconfig.ServerName, servers)
	}
	v := view{Type: e.Type, Command: e.Command, Args: e.Args, URL: e.URL}
	if e.URL != "" {
		if len(e.Headers) != 1 {
			t.Fatalf("%s: headers %v, want Authorization alone", client, e.Headers)
		}
		v.Auth = e.Headers["Authorization"]
	}
	for _, in := range doc.Inputs {
		if in.Type != "promptString" || !in.Password || in.Description == "" {
			t.Fatalf("vscode input %+v: want a described password promptString", in)
		}
		v.Prompted = append(v.Prompted, in.ID)
	}
	return v
}

func parseCodex(t testing.TB, text string) view {
	t.Helper()
	var doc struct {
		MCPServers map[string]struct {
			Command           string            `toml:"command"`
			Args              []string          `toml:"args"`
			URL               string            `toml:"url"`
			BearerTokenEnvVar string            `toml:"bearer_token_env_var"`
			HTTPHeaders       map[string]string `toml:"http_headers"`
		} `toml:"mcp_servers"`
	}
	md, err := toml.Decode(text, &doc)
	if err != nil {
		t.Fatalf("codex: not TOML: %v\n%s", err, text)
	}
	if u := md.Undecoded(); len(u) > 0 {
		t.Fatalf("codex: unexpected keys %v:\n%s", u, text)
	}
	e, ok := doc.MCPServers[mcpconfig.ServerName]
	if len(doc.MCPServers) != 1 || !ok {
		t.Fatalf("codex: want one [mcp_servers.%s], got %v", mcpconfig.ServerName, doc.MCPServers)
	}
	v := view{Command: e.Command, Args: e.Args, URL: e.URL, TokenEnv: e.BearerTokenEnvVar}
	if e.HTTPHeaders != nil {
		if len(e.HTTPHeaders) != 1 {
			t.Fatalf("codex: http_headers %v, want Authorization alone", e.HTTPHeaders)
		}
		v.Auth = e.HTTPHeaders["Authorization"]
	}
	return v
}

// want is the view each host must take from a config of s.
func want(client mcpconfig.Client, s mcpconfig.Server) view {
	if s.URL == "" {
		v := view{Command: s.Command, Args: []string{"mcp", "--home", s.Home}}
		switch client {
		case mcpconfig.ClaudeCode, mcpconfig.VSCode:
			v.Type = "stdio"
		}
		return v
	}
	v := view{URL: s.URL}
	switch client {
	case mcpconfig.ClaudeCode, mcpconfig.VSCode, mcpconfig.Generic:
		v.Type = "http"
	}
	if s.Token != "" {
		v.Auth = "Bearer " + s.Token
		return v
	}
	switch client {
	case mcpconfig.ClaudeCode, mcpconfig.Generic:
		v.Auth = "Bearer ${" + mcpconfig.TokenEnv + "}"
	case mcpconfig.Cursor:
		v.Auth = "Bearer ${env:" + mcpconfig.TokenEnv + "}"
	case mcpconfig.VSCode:
		v.Auth = "Bearer ${input:cua-bridge-token}"
		v.Prompted = []string{"cua-bridge-token"}
	case mcpconfig.Codex:
		v.TokenEnv = mcpconfig.TokenEnv
	}
	return v
}

// awkwardPath is a directory name that breaks naive quoting in each format:
// quotes of both kinds, a backslash, $ and command substitution, a glob, a
// tab, a newline, a control character, non-ASCII and a leading ~ and #.
const awkwardPath = "~#it's \"a\" \\ $(touch pwned) `touch pwned` $HOME * [x] {a,b}\t\n\x01\x7f é €"

// check renders client's config of s, parses it as the host does and
// compares what the host would run or call.
func check(t testing.TB, dir string, client mcpconfig.Client, s mcpconfig.Server) mcpconfig.Config {
	t.Helper()
	cfg, err := mcpconfig.Render(client, s)
	if err != nil {
		t.Fatalf("Render(%s, %+v): %v", client, s, err)
	}
	got, w := parse(t, dir, client, cfg.Text), want(client, s)
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", w) {
		t.Fatalf("%s: the host reads\n%q\nwant\n%q\nfrom:\n%s", client, got, w, cfg.Text)
	}
	return cfg
}

func TestRenderParsesInEachHostsFormat(t *testing.T) {
	dir := t.TempDir()
	plain := mcpconfig.Server{Command: "/opt/cua/bin/cua-bridge", Home: "/home/u/.cua"}
	awkward := mcpconfig.Server{Command: "/opt/" + awkwardPath + "/cua-bridge", Home: "/home/" + awkwardPath}
	url := "http://127.0.0.1:3210/mcp"
	cases := []struct {
		name string
		s    mcpconfig.Server
	}{
		{"stdio", plain},
		{"stdio awkward paths", awkward},
		// One word each: quoted for its $ alone.
		{"stdio expanding paths", mcpconfig.Server{Command: "/srv/$HOME/cua-bridge", Home: "/srv/$(pwd)"}},
		{"http by reference", mcpconfig.Server{URL: url, TokenFile: "/home/u/.cua/bridge.token"}},
		{"http awkward token file", mcpconfig.Server{URL: url, TokenFile: "/home/" + awkwardPath + "/t"}},
		{"http with token", mcpconfig.Server{URL: url, Token: "0123abcd", TokenFile: "/t"}},
		{"http with awkward token", mcpconfig.Server{URL: url, Token: "it's $(x) \"q\" \\", TokenFile: "/t"}},
	}
	for _, c := range cases {
		for _, client := range mcpconfig.Clients() {
			t.Run(c.name+"/"+string(client), func(t *testing.T) {
				if client == mcpconfig.ClaudeDesktop && c.s.URL != "" {
					t.Skip("claude-desktop has no HTTP form: TestClaudeDesktopRefusesHTTP")
				}
				cfg := check(t, dir, client, c.s)
				if c.name == "http by reference" && !strings.Contains(cfg.Note, c.s.TokenFile) {
					t.Errorf("the note does not say where the token is:\n%s", cfg.Note)
				}
			})
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Fatalf("the shell ran part of a path: %s holds %v", dir, ents)
	}
}

func TestClaudeDesktopRefusesHTTP(t *testing.T) {
	_, err := mcpconfig.Render(mcpconfig.ClaudeDesktop, mcpconfig.Server{URL: "http://127.0.0.1:3210/mcp", Token: "t"})
	if e := api.AsError(err); err == nil || e.Kind != api.KindInvalidArgument || !strings.Contains(e.Hint, "--http") {
		t.Fatalf("err = %v, want invalid_argument with a hint to drop --http", err)
	}
}

func TestRenderRefusesWhatNoConfigCanHold(t *testing.T) {
	for _, s := range []mcpconfig.Server{
		{Command: "/bin/cua-bridge", Home: "/home/\xff\xfe"},
		{Command: "/bin/\x80cua-bridge", Home: "/h"},
		{Command: "/bin/cua-bridge", Home: "/h\x00x"},
		{URL: "http://127.0.0.1:1/mcp", Token: "a\x00b"},
		{Command: "", Home: "/h"},
	} {
		for _, client := range mcpconfig.Clients() {
			if _, err := mcpconfig.Render(client, s); api.KindOf(err) != api.KindInvalidArgument {
				t.Errorf("Render(%s, %#v) = %v, want invalid_argument", client, s, err)
			}
		}
	}
	// A bad token is refused without being shown.
	_, err := mcpconfig.Render(mcpconfig.Generic, mcpconfig.Server{URL: "http://127.0.0.1:1/mcp", Token: "secret\xff"})
	if api.KindOf(err) != api.KindInvalidArgument || strings.Contains(err.Error(), "secret") {
		t.Errorf("bad token: %v", err)
	}
	if _, err := mcpconfig.Render("zed", mcpconfig.Server{Command: "/b", Home: "/h"}); api.KindOf(err) != api.KindInvalidArgument {
		t.Errorf("unknown client: %v", err)
	}
}

// FuzzRender: whatever the paths and token, every host reads back exactly
// what was rendered, and the shell runs nothing of it (bar the cat of
// claude-code's token file).
func FuzzRender(f *testing.F) {
	f.Add("/home/u/.cua", "/usr/local/bin/cua-bridge", "0123abcd")
	f.Add(awkwardPath, "/o/'\"$x", "t'o\"k$(e)n")
	f.Add("", "-", "\\")
	f.Fuzz(func(t *testing.T, home, command, token string) {
		dir := t.TempDir()
		// A token file as serve writes it, which claude-code's line reads.
		tokenFile := filepath.Join(t.TempDir(), "bridge.token")
		if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		servers := []mcpconfig.Server{
			{Command: "/" + command, Home: "/" + home},
			{URL: "http://127.0.0.1:3210/mcp", Token: token, TokenFile: "/" + home},
			{URL: "http://127.0.0.1:3210/mcp", Token: token, TokenFile: tokenFile, TokenFileExact: token != "" && !strings.HasSuffix(token, "\n")},
		}
		for _, s := range servers {
			for _, client := range mcpconfig.Clients() {
				if client == mcpconfig.ClaudeDesktop && s.URL != "" {
					continue
				}
				if _, err := mcpconfig.Render(client, s); err != nil {
					if api.KindOf(err) != api.KindInvalidArgument {
						t.Fatalf("Render(%s, %#v): %v", client, s, err)
					}
					continue
				}
				check(t, dir, client, s)
			}
		}
		if ents, _ := os.ReadDir(dir); len(ents) > 0 {
			t.Fatalf("the shell ran part of the input: %v", ents)
		}
	})
}

// TestEnvFormsSayAGUIHostLacksTheShellsVariables: beside every HTTP config
// whose host reads the token from its environment, the note says that a
// host started from a dock or a desktop menu does not see a shell's
// exported variables, and what to do then; a host with a prompt for the
// token (VS Code) gets that form instead, and the generic note points to it.
func TestEnvFormsSayAGUIHostLacksTheShellsVariables(t *testing.T) {
	s := mcpconfig.Server{URL: "http://127.0.0.1:3210/mcp", TokenFile: "/home/u/.cua/bridge.token"}
	envForms := 0
	for _, client := range mcpconfig.Clients() {
		if client == mcpconfig.ClaudeDesktop {
			continue
		}
		cfg := check(t, t.TempDir(), client, s)
		v := parse(t, t.TempDir(), client, cfg.Text)
		readsEnv := v.TokenEnv != "" || strings.Contains(v.Auth, "${"+mcpconfig.TokenEnv+"}") || strings.Contains(v.Auth, "${env:"+mcpconfig.TokenEnv+"}")
		switch {
		case readsEnv:
			envForms++
			if !strings.Contains(cfg.Note, "started from a dock or a desktop menu") || !strings.Contains(cfg.Note, "--show-token") {
				t.Errorf("%s reads the token from its environment, and the note does not say a GUI host lacks it:\n%s", client, cfg.Note)
			}
		case len(v.Prompted) == 0:
			t.Errorf("%s: the token comes neither from the environment nor from a prompt: %+v", client, v)
		}
		if client == mcpconfig.Generic && !strings.Contains(cfg.Note, "--client vscode") {
			t.Errorf("the generic note does not offer VS Code's prompted form:\n%s", cfg.Note)
		}
	}
	if envForms < 4 {
		t.Fatalf("%d forms read the environment, want claude-code, cursor, codex and generic", envForms)
	}
}

// TestRenderClaudeCodeReadsAnExactTokenFile: given a token file that holds
// the token alone, the claude-code line has the shell read it as it runs
// ($(cat FILE)): Claude Code gets the token, the line holds none.
func TestRenderClaudeCodeReadsAnExactTokenFile(t *testing.T) {
	for _, dir := range []string{"plain", awkwardPath} {
		token := "it's $(x) \"q\" \\ `y` *"
		file := filepath.Join(t.TempDir(), dir, "bridge.token")
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s := mcpconfig.Server{URL: "http://127.0.0.1:3210/mcp", Token: token, TokenFile: file, TokenFileExact: true}
		cfg := check(t, t.TempDir(), mcpconfig.ClaudeCode, s)
		if strings.Contains(cfg.Text, token) || strings.Contains(cfg.Note, token) {
			t.Fatalf("the line or its note holds the token:\n%s%s", cfg.Text, cfg.Note)
		}
	}
}
