package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"))
}

// The admin CLI drives a running relay (serve, in process) through its
// admin socket: users, a token shown once, computers; the relay's
// self-signed certificate's fingerprint is printed as the daemon prints
// its own.
func TestAdminCLIAgainstRunningRelay(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	var serveOut, serveErr bytes.Buffer
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dir, "--tls-self-signed", "--node", "n1", "--log-level", "error"}, &serveOut, &serveErr)
	}()
	sock := filepath.Join(dir, relayapi.AdminSocket)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if fi, err := os.Stat(sock); err == nil {
			if fi.Mode().Perm() != 0o600 {
				t.Fatalf("admin socket mode %v, want 0600", fi.Mode().Perm())
			}
			break
		}
		select {
		case code := <-served:
			t.Fatalf("serve ended: %d %s", code, serveErr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no admin socket")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(t.Context(), append(args, "--data-dir", dir), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, out, errs := cli("user", "add", "alice", "--email", "alice@example.com"); code != 0 || !strings.Contains(out, "alice") {
		t.Fatalf("user add: %d %s %s", code, out, errs)
	}
	if code, _, errs := cli("user", "add", "alice"); code != 1 || !strings.Contains(errs, "exists") {
		t.Fatalf("user add twice: %d %s", code, errs)
	}
	code, out, errs := cli("token", "create", "alice")
	tok := strings.TrimSpace(out)
	if k, err := protocol.ParseToken(tok); code != 0 || err != nil || k != protocol.TokenUser {
		t.Fatalf("token create: %d %q %s", code, out, errs)
	}
	if code, out, _ := cli("user", "ls"); code != 0 || !strings.Contains(out, "alice@example.com") || strings.Contains(out, tok) {
		t.Fatalf("user ls: %d %s", code, out)
	}
	if code, out, _ := cli("computer", "ls", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("computer ls: %d %s", code, out)
	}
	if code, _, _ := cli("user", "rm", "alice"); code != 0 {
		t.Fatalf("user rm: %d", code)
	}
	if code, out, _ := cli("user", "ls", "--json"); code != 0 || strings.Contains(out, "alice") {
		t.Fatalf("user ls after rm: %d %s", code, out)
	}
	if code, _, _ := cli("user", "frob"); code != 2 {
		t.Fatalf("an unknown command: %d", code)
	}
	cancel()
	if code := <-served; code != 0 {
		t.Fatalf("serve: %d %s", code, serveErr.String())
	}
	if !strings.Contains(serveOut.String(), "TLS self-signed certificate sha256:") {
		t.Fatalf("no fingerprint printed: %s", serveOut.String())
	}
	// The CLI never opens the store: with no relay running, it says so.
	if code, _, errs := cli("user", "ls"); code != 1 || !strings.Contains(errs, "cua-relay serve running") {
		t.Fatalf("user ls without a relay: %d %s", code, errs)
	}
}
