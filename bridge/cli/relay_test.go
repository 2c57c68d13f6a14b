package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/bridge/relaytest"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// The relay commands as a person runs them, against a stand-in relay
// (bridge/relaytest; the end-to-end suite runs the real cua-relay) and a
// real daemon: login checks the token, status and space ls show the
// account's computers, exec runs on relay:<computer>, register and
// unregister publish a Space and take it off.
func TestRelayCommands(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	r := relaytest.Start(t)
	tok := r.AddUser(t, "alice")
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "relay.token")
	if err := os.WriteFile(tokFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	// Not logged in: the hint says how.
	if res := run(ctx, s.home, "", "relay", "status"); res.code != 1 || !strings.Contains(res.stderr, "unauthenticated") || !strings.Contains(res.stderr, "cua-bridge relay login") {
		t.Fatalf("status before login: %+v", res)
	}
	if res := run(ctx, s.home, "", "exec", "relay:box", "--", "true"); res.code != 255 || !strings.Contains(res.stderr, "cua-bridge relay login") {
		t.Fatalf("exec on relay:box before login: %+v", res)
	}
	if res := run(ctx, s.home, "", "relay", "login", "--url", r.URL); res.code != 2 {
		t.Fatalf("login without a token file: %+v", res)
	}
	if res := run(ctx, s.home, "", "relay", "login", "--url", r.URL, "--token-file", tokFile); res.code != 1 || !strings.Contains(res.stderr, "relay") {
		t.Fatalf("login without trusting the test CA: %+v", res)
	}
	if res := run(ctx, s.home, "", "relay", "login", "--url", r.URL, "--token-file", tokFile, "--fingerprint", r.Fingerprint); res.code != 0 || !strings.Contains(res.stdout, "as alice") {
		t.Fatalf("login: %+v", res)
	}

	r.Attach("alice", "box", s.d.URL, s.d.Token)
	if res := run(ctx, s.home, "", "exec", "relay:box", "--", "sh", "-c", "echo via relay; exit 4"); res.code != 4 || res.stdout != "via relay\n" {
		t.Fatalf("exec on relay:box: %+v", res)
	}
	if res := run(ctx, s.home, "", "relay", "status"); res.code != 0 || !strings.Contains(res.stdout, "alice") || !strings.Contains(res.stdout, "relay:box") {
		t.Fatalf("status: %+v", res)
	}
	res := run(ctx, s.home, "", "space", "ls", "--json")
	var rows []struct {
		Name   string
		Online bool
	}
	if err := json.Unmarshal([]byte(res.stdout), &rows); err != nil || res.code != 0 {
		t.Fatalf("space ls --json: %+v, %v", res, err)
	}
	if len(rows) != 2 || rows[0].Name != "dev" || rows[1].Name != "relay:box" || !rows[1].Online {
		t.Fatalf("space ls: %+v", rows)
	}

	// Register and unregister. The stand-in relay takes no attach: the
	// real daemon is told to attach, and the answer says it is not
	// connected (yet). The happy path runs through the stand-in's front,
	// which serves /v1/relay for the daemon (test/relay runs the real one).
	if res := run(ctx, s.home, "", "relay", "register", "dev"); res.code != 0 || !strings.Contains(res.stdout, "not connected yet") {
		t.Fatalf("register a Space the relay does not take: %+v", res)
	}
	f := r.Front(t, s.d.URL, s.d.Token)
	if res := run(ctx, s.home, "", "space", "add", "front", f.URL, "--token", s.d.Token); res.code != 0 {
		t.Fatalf("space add front: %+v", res)
	}
	res = run(ctx, s.home, "", "relay", "register", "front", "--name", "desk", "--json")
	var reg map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &reg); err != nil || res.code != 0 {
		t.Fatalf("register: %+v", res)
	}
	if reg["space"] != "front" || reg["relay_space"] != "relay:desk" || reg["machine"] != "desk" || reg["url"] != r.URL+"/c/desk" || reg["online"] != true {
		t.Fatalf("register answered %v", reg)
	}
	if res := run(ctx, s.home, "", "exec", "relay:desk", "--", "echo", "published"); res.code != 0 || res.stdout != "published\n" {
		t.Fatalf("exec on relay:desk: %+v", res)
	}
	if res := run(ctx, s.home, "", "relay", "unregister", "front"); res.code != 0 || !strings.Contains(res.stdout, "off the relay") || r.Exists("desk") {
		t.Fatalf("unregister: %+v", res)
	}
	// A relay that cannot be reached: the local Spaces are listed, and
	// stderr says why the relay's are not.
	r.Close()
	if res := run(ctx, s.home, "", "space", "ls"); res.code != 0 || !strings.Contains(res.stdout, "dev") || !strings.Contains(res.stderr, "relay not listed") {
		t.Fatalf("space ls with the relay down: %+v", res)
	}
	if res := run(ctx, s.home, "", "relay", "logout"); res.code != 0 {
		t.Fatalf("logout: %+v", res)
	}
	if res := run(ctx, s.home, "", "space", "ls", "--json"); res.code != 0 || strings.Contains(res.stdout, "relay:") {
		t.Fatalf("space ls after logout: %+v", res)
	}
}
