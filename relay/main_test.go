package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
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
		served <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dir, "--tls-self-signed", "--node", "n1", "--log-level", "error",
			"--turn-listen", "127.0.0.1:0", "--turn-tls-listen", "127.0.0.1:0"}, &serveOut, &serveErr)
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
	// Teams: add, members, at most one team per user, ls.
	if code, out, errs := cli("team", "add", "red"); code != 0 || !strings.Contains(out, "team red added") {
		t.Fatalf("team add: %d %s %s", code, out, errs)
	}
	if code, _, errs := cli("team", "add", "blue"); code != 0 {
		t.Fatalf("team add blue: %d %s", code, errs)
	}
	if code, out, errs := cli("team", "member", "add", "red", "alice"); code != 0 || strings.TrimSpace(out) != "team red: alice" {
		t.Fatalf("team member add: %d %q %s", code, out, errs)
	}
	if code, _, errs := cli("team", "member", "add", "blue", "alice"); code != 1 || !strings.Contains(errs, "at most one team") {
		t.Fatalf("a second team: %d %s", code, errs)
	}
	if code, _, _ := cli("team", "member", "add", "red"); code != 2 {
		t.Fatalf("team member add without a user: %d", code)
	}
	if code, out, _ := cli("team", "ls"); code != 0 || !strings.Contains(out, "red   alice") && !strings.Contains(out, "red  alice") {
		t.Fatalf("team ls: %d %q", code, out)
	}
	if code, out, errs := cli("team", "member", "rm", "red", "alice"); code != 0 || strings.TrimSpace(out) != "team red:" {
		t.Fatalf("team member rm: %d %q %s", code, out, errs)
	}
	if code, out, _ := cli("team", "ls", "--json"); code != 0 || !strings.Contains(out, `"id": "blue"`) || strings.Contains(out, "alice") {
		t.Fatalf("team ls --json: %d %s", code, out)
	}
	if code, _, _ := cli("user", "rm", "alice"); code != 0 {
		t.Fatalf("user rm: %d", code)
	}
	if code, out, _ := cli("user", "ls", "--json"); code != 0 || strings.Contains(out, "alice") {
		t.Fatalf("user ls after rm: %d %s", code, out)
	}
	if code, out, errs := cli("metrics"); code != 0 || !strings.Contains(out, "# TYPE cua_relay_sessions gauge\ncua_relay_sessions 0\n") ||
		!strings.Contains(out, "cua_relay_turn_allocations 0\n") {
		t.Fatalf("metrics: %d %s %s", code, out, errs)
	}
	if code, out, errs := cli("status"); code != 0 || !strings.Contains(out, "a single node (no cluster)") || !strings.Contains(out, "KV_relay_users") {
		t.Fatalf("status: %d %s %s", code, out, errs)
	}
	if code, out, _ := cli("metrics"); code != 0 || !strings.Contains(out, "cua_relay_jetstream_meta_leader 1\n") {
		t.Fatalf("metrics: no NATS health: %s", out)
	}
	// A backup is a single node's JetStream dir: another relay opens it.
	bdir := filepath.Join(t.TempDir(), "backup")
	if code, out, errs := cli("backup", "--to", bdir); code != 0 || !strings.Contains(out, "backup in "+bdir) {
		t.Fatalf("backup: %d %s %s", code, out, errs)
	}
	if code, _, errs := cli("backup", "--to", bdir); code != 1 || !strings.Contains(errs, "not empty") {
		t.Fatalf("backup over a backup: %d %s", code, errs)
	}
	if code, _, _ := cli("user", "frob"); code != 2 {
		t.Fatalf("an unknown command: %d", code)
	}
	// Drain: status says serving, then (SIGUSR1, then the command) draining.
	if code, out, errs := cli("status"); code != 0 || !strings.Contains(out, "node n1") || !strings.Contains(out, ": serving;") {
		t.Fatalf("status: %d %q %s", code, out, errs)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, out, _ := cli("status")
		if code == 0 && strings.Contains(out, "draining since") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status after SIGUSR1: %d %q", code, out)
		}
	}
	if code, out, errs := cli("drain", "--retry-after", "1s", "--grace", "1s"); code != 0 || !strings.Contains(out, "node n1 is draining: 0 session(s)") {
		t.Fatalf("drain: %d %q %s", code, out, errs)
	}
	if code, _, errs := cli("drain", "--grace", "0s"); code != 2 || !strings.Contains(errs, "at least 1ms") {
		t.Fatalf("drain --grace 0s: %d %s", code, errs)
	}
	if code, out, _ := cli("status", "--json"); code != 0 || !strings.Contains(out, `"draining": true`) {
		t.Fatalf("status --json: %d %s", code, out)
	}
	cancel()
	if code := <-served; code != 0 {
		t.Fatalf("serve: %d %s", code, serveErr.String())
	}
	if !strings.Contains(serveOut.String(), "TLS self-signed certificate sha256:") {
		t.Fatalf("no fingerprint printed: %s", serveOut.String())
	}
	if !regexp.MustCompile(`TURN on udp 127\.0\.0\.1:\d+, tcp 127\.0\.0\.1:\d+, tls 127\.0\.0\.1:\d+ \(relayed address 127\.0\.0\.1\)`).MatchString(serveOut.String()) {
		t.Fatalf("no TURN addresses printed: %s", serveOut.String())
	}
	// The CLI never opens the store: with no relay running, it says so.
	if code, _, errs := cli("user", "ls"); code != 1 || !strings.Contains(errs, "cua-relay serve running") {
		t.Fatalf("user ls without a relay: %d %s", code, errs)
	}
}

// serve's TURN flags: "off" turns TURN off, an address is checked, and
// --turn-ip must be an IPv4 address.
func TestTURNFlags(t *testing.T) {
	for _, c := range []struct {
		listen, tls, ip, ports string
		on, ok                 bool
	}{
		{":3478", "", "", "", true, true},
		{"off", "", "", "", false, true},
		{"off", ":5349", "", "", true, true},
		{"", "", "", "", false, true},
		{"3478", "", "", "", false, false},
		{":3478", "", "203.0.113.5", "", true, true},
		{":3478", "", "2001:db8::1", "", false, false},
		{":3478", "", "turn.example", "", false, false},
		{":3478", "", "0.0.0.0", "", false, false},
		{":3478", "", "", "49152-65535", true, true},
		{":3478", "", "", "50000-50000", true, true},
		{":3478", "", "", "50000", false, false},
		{":3478", "", "", "60000-50000", false, false},
		{":3478", "", "", "80-90", false, false},
		{":3478", "", "", "50000-70000", false, false},
	} {
		o, err := turnOptions(c.listen, c.tls, c.ip, "", c.ports)
		if (err == nil) != c.ok || (o != nil) != c.on {
			t.Errorf("--turn-listen %q --turn-tls-listen %q --turn-ip %q --turn-relay-ports %q: %+v, %v", c.listen, c.tls, c.ip, c.ports, o, err)
		}
	}
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"serve", "--data-dir", t.TempDir(), "--insecure-no-tls", "--turn-tls-listen", "127.0.0.1:0"}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "needs the relay's certificate") {
		t.Fatalf("TURN over TLS without TLS: %d %s", code, errb.String())
	}
}

// The cluster's flags: a mesh key from cua-relay cluster key, which
// --cluster requires in a file others may not read; the cluster's other
// flags need --cluster; --public-url takes comma lists.
func TestClusterFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"cluster", "key"}, &out, &errb); code != 0 || !regexp.MustCompile(`^[0-9a-f]{64}\n$`).MatchString(out.String()) {
		t.Fatalf("cluster key: %d %q %s", code, out.String(), errb.String())
	}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "mesh.key")
	if err := os.WriteFile(keyFile, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster", "relays"}, "needs --cluster-key-file"},
		{[]string{"--cluster", "relays", "--cluster-key-file", keyFile}, "others may read it"},
		{[]string{"--routes", "nats://127.0.0.1:6222"}, "need --cluster NAME"},
		{[]string{"--cluster", "relays", "--cluster-key-file", keyFile + ".none"}, "no such file"},
	} {
		errb.Reset()
		args := append([]string{"serve", "--data-dir", t.TempDir(), "--insecure-no-tls", "--turn-listen", "off"}, c.args...)
		if code := run(t.Context(), args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("serve %v: %d %s, want %q", c.args, code, errb.String(), c.want)
		}
	}
	var l listFlag
	for _, v := range []string{"wss://a:8443,wss://b:8443", " wss://c:8443 "} {
		_ = l.Set(v)
	}
	if l.String() != "wss://a:8443,wss://b:8443,wss://c:8443" {
		t.Errorf("--public-url lists: %q", l.String())
	}
}

// serve's --recheck takes a duration of a second or more: a re-check in a
// tight loop would read every shared person's role without pause.
func TestRecheckFlag(t *testing.T) {
	for _, c := range []struct {
		value, want string
	}{
		{"0s", "give 1s or more"},
		{"500ms", "give 1s or more"},
		{"soon", "invalid value"},
	} {
		var out, errb bytes.Buffer
		code := run(t.Context(), []string{"serve", "--data-dir", t.TempDir(), "--insecure-no-tls", "--turn-listen", "off", "--recheck", c.value}, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("--recheck %s: %d %q", c.value, code, errb.String())
		}
	}
}
