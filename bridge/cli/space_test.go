package cli_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/bridge/cli"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

func TestSpaceAddLsRm(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	home := t.TempDir()
	ctx := t.Context()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(d.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	r := run(ctx, home, "", "space", "add", "dev", d.URL, "--token-file", tokenFile)
	if r.code != 0 || !strings.Contains(r.stdout, "added dev") {
		t.Fatalf("space add: %+v", r)
	}

	r = run(ctx, home, "", "space", "ls")
	if r.code != 0 {
		t.Fatalf("space ls: %+v", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("space ls table:\n%s", r.stdout)
	}
	if f := strings.Fields(lines[1]); len(f) != 4 || f[0] != "dev" || f[1] != d.URL || f[2] != "yes" || f[3] != "test" {
		t.Fatalf("space ls row %q", lines[1])
	}

	r = run(ctx, home, "", "space", "ls", "--json")
	var rows []struct {
		Name     string   `json:"name"`
		Online   bool     `json:"online"`
		Features []string `json:"features"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 || !rows[0].Online {
		t.Fatalf("space ls --json: %v %+v", err, r)
	}

	r = run(ctx, home, "", "space", "rm", "dev")
	if r.code != 0 {
		t.Fatalf("space rm: %+v", r)
	}
	r = run(ctx, home, "", "space", "ls")
	if strings.Contains(r.stdout, "dev") {
		t.Fatalf("dev still listed after rm:\n%s", r.stdout)
	}
}

func TestSpaceAddRefuses(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	// A web server that is not spacesd: answers everything with a page.
	web := testenv.ServeHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("<html>hello</html>"))
	}))

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"wrong token", []string{"space", "add", "dev", d.URL, "--token", "wrong"}, "unauthenticated"},
		{"not spacesd", []string{"space", "add", "dev", web, "--token", "x"}, "runs no cua-spacesd"},
		{"bad name", []string{"space", "add", "bad name!", d.URL}, "space name"},
		{"bad url", []string{"space", "add", "dev", "ftp://x"}, "not an http(s) URL"},
		{"two tokens", []string{"space", "add", "dev", d.URL, "--token", "a", "--token-file", "f"}, "one way only"},
		{"rm unknown", []string{"space", "rm", "nope"}, "no space named"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			r := run(t.Context(), home, "", tt.args...)
			if r.code == 0 || !strings.Contains(strings.ToLower(r.stderr), strings.ToLower(tt.want)) {
				t.Fatalf("want failure mentioning %q, got %+v", tt.want, r)
			}
			if r := run(t.Context(), home, "", "space", "ls"); strings.Contains(r.stdout, "dev") {
				t.Fatalf("refused Space was registered:\n%s", r.stdout)
			}
		})
	}
}

func TestSpaceAddNoVerifyOffline(t *testing.T) {
	// A port nothing listens on: registered with --no-verify, listed offline.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	home := t.TempDir()
	if r := run(t.Context(), home, "", "space", "add", "gone", addr, "--no-verify"); r.code != 0 {
		t.Fatalf("space add --no-verify: %+v", r)
	}
	r := run(t.Context(), home, "", "space", "ls")
	if !strings.Contains(r.stdout, "gone") || !strings.Contains(r.stdout, "no (env)") {
		t.Fatalf("offline Space not shown offline:\n%s", r.stdout)
	}
}

// The CLI takes its clients from Env.Clients, as the MCP tools take theirs
// from the registry's factory: a Space at a URL nothing answers on (a relay
// Space's) is added, listed and used through the factory's dialer.
func TestCommandsReachSpacesThroughTheFactory(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	daemonAddr := strings.TrimPrefix(d.URL, "http://")
	env := cli.Env{Stdin: strings.NewReader(""), Home: t.TempDir(),
		Clients: func(e registry.Entry) (*client.Client, error) {
			return client.New(e.URL, e.Token, client.WithDialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
				var nd net.Dialer
				return nd.DialContext(ctx, network, daemonAddr)
			}))
		}}
	runWith := func(args ...string) result {
		var out, errb testenv.SyncBuffer
		env.Stdout, env.Stderr = &out, &errb
		code := cli.Run(t.Context(), env, args[0], args[1:])
		return result{code, out.String(), errb.String()}
	}
	if r := runWith("space", "add", "far", "http://127.0.0.1:1", "--token", d.Token); r.code != 0 {
		t.Fatalf("space add probed around the factory: %+v", r)
	}
	if r := runWith("space", "ls"); r.code != 0 || !strings.Contains(r.stdout, "yes") {
		t.Fatalf("space ls probed around the factory: %+v", r)
	}
	if r := runWith("exec", "far", "--", "echo", "hi"); r.code != 0 || r.stdout != "hi\n" {
		t.Fatalf("exec: %+v", r)
	}
}

// space add reads --token-file as the daemon reads its own (the first
// line): a file of several tokens, such as the registry's tokens.json, is
// refused before anything is sent, instead of going whole to the Space as
// one Bearer value.
func TestSpaceAddRefusesAFileOfSeveralTokens(t *testing.T) {
	seed := t.TempDir()
	reg, err := registry.Open(seed)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "other-space-secret-token"
	if _, err := reg.Add(t.Context(), "other", "http://127.0.0.1:3211", secret); err != nil {
		t.Fatal(err)
	}
	// Stands where the Space would: it hears every Authorization sent.
	heard := make(chan string, 16)
	space := testenv.ServeHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		heard <- r.Header.Get("Authorization")
		http.Error(w, "no", http.StatusUnauthorized)
	}))

	home := t.TempDir()
	r := run(t.Context(), home, "", "space", "add", "dev", space, "--token-file", filepath.Join(seed, registry.TokensFile))
	if r.code == 0 || !strings.Contains(r.stderr, "invalid_argument") || !strings.Contains(r.stderr, "holds JSON") || strings.Contains(r.stderr, secret) {
		t.Fatalf("space add with tokens.json as the token file: %+v; want invalid_argument naming JSON, without the token", r)
	}
	select {
	case a := <-heard:
		t.Fatalf("the Space was sent Authorization %q", a)
	default:
	}
	if r := run(t.Context(), home, "", "space", "ls"); strings.Contains(r.stdout, "dev") {
		t.Fatalf("refused Space was registered:\n%s", r.stdout)
	}
}
