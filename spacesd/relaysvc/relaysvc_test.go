package relaysvc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/spacesd/relaysvc"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// attach is PUT /v1/relay with the daemon's token.
func attach(t *testing.T, d *spacesdtest.Daemon, relay *standIn) api.RelayStatus {
	t.Helper()
	st, err := d.AttachRelay(t.Context(), api.RelayAttachRequest{URLs: []string{relay.URL}, Token: relay.Token, CAPEM: relay.CAPEM, WaitMS: 30000})
	if err != nil {
		t.Fatalf("PUT /v1/relay: %v", err)
	}
	return st
}

func status(t *testing.T, d *spacesdtest.Daemon) api.RelayStatus {
	t.Helper()
	st, err := d.RelayStatus(t.Context())
	if err != nil {
		t.Fatalf("GET /v1/relay: %v", err)
	}
	return st
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// relayClient is a client of the daemon whose connections are relayed
// streams of person.
func relayClient(t *testing.T, relay *standIn, rs *relaySession, person string) *client.Client {
	c, err := client.New("http://relay.example", "", client.WithDialer(relay.dialer(t, rs, person)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The core path: PUT /v1/relay attaches; a request through the relay is
// served as the grant's person (an exec, with idempotency keys of its
// own), and so is a WebSocket stream; the capabilities report it.
func TestAttachAndServeAsTheGrantsPerson(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	d := spacesdtest.Start(t, spacesdtest.Options{Relay: relaysvc.Options{StateDir: t.TempDir()}})
	st := attach(t, d, relay)
	if !st.Attached || !st.Connected || st.Computer != "box" || st.Node != "node-1" || !strings.HasPrefix(st.GrantKey, "ed25519:") || st.URL != relay.URL {
		t.Fatalf("status after the attach: %+v", st)
	}
	rs := relay.next(t)
	if relay.lastBearer() != relay.Token {
		t.Fatal("the Space did not send its computer token")
	}

	counter := filepath.Join(t.TempDir(), "count")
	exec := func(c *client.Client, key string) {
		t.Helper()
		ctx := client.WithIdempotencyKey(t.Context(), key)
		res, err := c.Exec(ctx, api.ExecRequest{Command: api.Command{Shell: "echo x >> " + counter}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("exec through the relay: %v %+v", err, res)
		}
	}
	lines := func() int {
		b, _ := os.ReadFile(counter)
		return strings.Count(string(b), "\n")
	}
	alice, bob := relayClient(t, relay, rs, "u-alice"), relayClient(t, relay, rs, "u-bob")
	exec(alice, "k1")
	exec(alice, "k1") // a replay: alice's key
	if n := lines(); n != 1 {
		t.Fatalf("alice's retry ran again: %d runs", n)
	}
	exec(bob, "k1") // bob's call: his own key
	if n := lines(); n != 2 {
		t.Fatalf("bob's call with alice's key was taken for hers: %d runs", n)
	}

	// A WebSocket stream through the relay.
	info, err := alice.Start(t.Context(), api.StartRequest{Command: api.Command{Shell: "echo relayed-output"}})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := alice.StreamProcess(t.Context(), info.ID, 0, 0)
	if err != nil {
		t.Fatalf("a WebSocket stream through the relay: %v", err)
	}
	defer stream.Close()
	var out strings.Builder
	for !strings.Contains(out.String(), "relayed-output") {
		ev, err := stream.Next()
		if err != nil {
			t.Fatalf("stream: %v (got %q)", err, out.String())
		}
		out.Write(ev.Data)
	}

	caps, err := alice.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !caps.Features[api.FeatureRelayAttach].Supported || caps.Relay == nil || !caps.Relay.Connected {
		t.Fatalf("capabilities: relay_attach %+v, relay %+v", caps.Features[api.FeatureRelayAttach], caps.Relay)
	}
}

// A stream whose grant fails (another key, another computer, expired,
// or no header at all) is closed with nothing served; a good one is
// served.
func TestBadGrantClosesTheStream(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	d := spacesdtest.Start(t, spacesdtest.Options{})
	attach(t, d, relay)
	rs := relay.next(t)
	cases := []struct {
		name  string
		grant []byte
		want  int
	}{
		{"good", relay.grant(t, "u-alice", nil, nil), http.StatusOK},
		{"wrong key", relay.grant(t, "u-alice", newKey(t), nil), 0},
		{"other computer", relay.grant(t, "u-alice", nil, func(g *protocol.Grant) { g.Computer = "other" }), 0},
		{"expired", relay.grant(t, "u-alice", nil, func(g *protocol.Grant) {
			g.IssuedAt = time.Now().Add(-10 * time.Minute)
			g.ExpiresAt = g.IssuedAt.Add(time.Minute)
		}), 0},
	}
	for _, tc := range cases {
		c := rs.open(t, tc.grant)
		code, err := get(c, api.PathRelay)
		c.Close()
		if code != tc.want {
			t.Errorf("%s: answered %d (%v), want %d", tc.name, code, err, tc.want)
		}
	}
	// The refusals are counted.
	resp, err := d.Client.Do(t.Context(), http.MethodGet, api.PathMetrics, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), "cua_spacesd_relay_streams_refused_total 3") {
		t.Errorf("metrics do not count 3 refused streams:\n%s", b)
	}
}

// A kick closes every connection of that person, and only theirs.
func TestKickClosesThatPersonsConnections(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	d := spacesdtest.Start(t, spacesdtest.Options{})
	attach(t, d, relay)
	rs := relay.next(t)
	a1, a2 := rs.open(t, relay.grant(t, "u-alice", nil, nil)), rs.open(t, relay.grant(t, "u-alice", nil, nil))
	b := rs.open(t, relay.grant(t, "u-bob", nil, nil))
	for _, c := range []interface {
		Close() error
	}{a1, a2, b} {
		defer c.Close()
	}
	for _, c := range []struct {
		name string
		get  func() (int, error)
	}{{"a1", func() (int, error) { return get(a1, api.PathRelay) }}, {"a2", func() (int, error) { return get(a2, api.PathRelay) }}, {"b", func() (int, error) { return get(b, api.PathRelay) }}} {
		if code, err := c.get(); code != 200 {
			t.Fatalf("%s before the kick: %d %v", c.name, code, err)
		}
	}
	rs.send(t, protocol.Kick{Person: "u-alice", Reason: protocol.CloseKicked})
	for i, c := range []netConn{a1, a2} {
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		if n, err := c.Read(make([]byte, 1)); err == nil {
			t.Errorf("alice's connection %d read %d bytes after the kick", i, n)
		}
	}
	if code, err := get(b, api.PathRelay); code != 200 {
		t.Errorf("bob's connection after alice's kick: %d %v", code, err)
	}
	// A request the relay still sends on a kicked connection is not
	// served (a yamux close is a half close: the Space must stop reading).
	marker := filepath.Join(t.TempDir(), "ran")
	body := `{"shell":"touch ` + marker + `"}`
	_, _ = fmt.Fprintf(a1, "POST %s HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", api.PathExec, len(body), body)
	// Bob's exec, sent after, ran: alice's would have run by then.
	bobc := relayClient(t, relay, rs, "u-bob")
	if _, err := bobc.Exec(t.Context(), api.ExecRequest{Command: api.Command{Shell: "true"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a request sent on a kicked connection was served")
	}
}

// The data connection: an OpenData makes the Space dial /v1/data with the
// data token, check the header's grant, and serve that connection.
func TestOpenDataServesTheDataConnection(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	d := spacesdtest.Start(t, spacesdtest.Options{})
	attach(t, d, relay)
	rs := relay.next(t)
	tok, err := protocol.NewToken(protocol.TokenData)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan netConn, 1)
	relay.mu.Lock()
	relay.data[tok] = ch
	relay.mu.Unlock()
	rs.send(t, protocol.OpenData{Token: tok, Path: relayapi.PathData})
	var c netConn
	select {
	case c = <-ch:
	case <-time.After(time.Minute):
		t.Fatal("the Space never dialled the data connection")
	}
	defer c.Close()
	if err := protocol.WriteHeader(c, protocol.Header{Version: protocol.Version, Kind: protocol.StreamHTTP, Grant: relay.grant(t, "u-alice", nil, nil)}); err != nil {
		t.Fatal(err)
	}
	if code, err := get(c, api.PathRelay); code != 200 {
		t.Fatalf("the data connection answered %d %v", code, err)
	}
}

// A relay whose grant key changed is refused (grant_key_changed) and not
// dialled again until a new PUT /v1/relay, which trusts the new key.
func TestChangedGrantKeyRefused(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	d := spacesdtest.Start(t, spacesdtest.Options{Logger: debugLogger()})
	first := attach(t, d, relay)
	rs := relay.next(t)
	relay.setKey(newKey(t))
	rs.sess.Close()
	rs2 := relay.next(t)
	select {
	case m := <-rs2.frames:
		if c, ok := m.(protocol.Close); !ok || c.Code != protocol.CloseGrantKeyChanged {
			t.Fatalf("the Space answered a new key with %#v", m)
		}
	case <-time.After(time.Minute):
		t.Fatal("the Space did not refuse the new key")
	}
	eventually(t, "the status names the refusal", func() bool {
		st := status(t, d)
		return !st.Connected && strings.Contains(st.LastError, "grant_key_changed") && st.GrantKey == first.GrantKey
	})
	n := relay.attaches()
	time.Sleep(time.Second) // the backoff's first waits are under a second
	if relay.attaches() != n {
		t.Fatal("the Space dialled again after a grant key change")
	}
	st := attach(t, d, relay)
	if !st.Connected || st.GrantKey == first.GrantKey {
		t.Fatalf("a new PUT did not trust the new key: %+v", st)
	}
}

// The state dir keeps the attachment: a restarted Space attaches again
// by itself, naming the computer it learnt; the token file is 0600.
func TestRestartReattachesFromTheStateDir(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	dir := t.TempDir()
	d := spacesdtest.Start(t, spacesdtest.Options{Relay: relaysvc.Options{StateDir: dir}})
	attach(t, d, relay)
	relay.next(t)
	fi, err := os.Stat(filepath.Join(dir, relaysvc.TokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	d.Stop()
	d2 := spacesdtest.Start(t, spacesdtest.Options{Relay: relaysvc.Options{StateDir: dir}})
	relay.next(t)
	relay.mu.Lock()
	hello := relay.hellos[len(relay.hellos)-1]
	relay.mu.Unlock()
	if hello.Computer != "box" {
		t.Fatalf("the restarted Space's hello names %q", hello.Computer)
	}
	eventually(t, "connected after the restart", func() bool { return status(t, d2).Connected })
}

// The flags attach at start, reading the token file.
func TestFlagsAttachAtStart(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	dir := t.TempDir()
	tokFile, caFile := filepath.Join(dir, "tok"), filepath.Join(dir, "ca.pem")
	os.WriteFile(tokFile, []byte(relay.Token+"\n"), 0o600)
	os.WriteFile(caFile, []byte(relay.CAPEM), 0o600)
	d := spacesdtest.Start(t, spacesdtest.Options{Relay: relaysvc.Options{URLs: []string{relay.URL}, TokenFile: tokFile, CAFile: caFile}})
	relay.next(t)
	eventually(t, "connected", func() bool { return status(t, d).Connected })
}

// DELETE /v1/relay ends the session, forgets the relay and stops dialling.
func TestDetachStopsDialling(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	clock := newFakeClock()
	dir := t.TempDir()
	d := spacesdtest.Start(t, spacesdtest.Options{Relay: relaysvc.Options{StateDir: dir, Clock: clock}})
	attach(t, d, relay)
	rs := relay.next(t)
	var det api.RelayDetached
	if err := d.Client.JSON(t.Context(), http.MethodDelete, api.PathRelay, nil, nil, &det); err != nil || !det.Detached {
		t.Fatalf("DELETE: %+v %v", det, err)
	}
	select {
	case <-rs.ended:
	case <-time.After(time.Minute):
		t.Fatal("the session outlived the detach")
	}
	n := relay.attaches()
	clock.Advance(time.Hour)
	time.Sleep(100 * time.Millisecond)
	if relay.attaches() != n || status(t, d).Attached {
		t.Fatalf("dialled after the detach, or still attached: %+v", status(t, d))
	}
	if _, err := os.Stat(filepath.Join(dir, relaysvc.StateFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the state dir still names the relay: %v", err)
	}
	if err := d.Client.JSON(context.Background(), http.MethodDelete, api.PathRelay, nil, nil, &det); err != nil || det.Detached {
		t.Fatalf("a second DELETE: %+v %v", det, err)
	}
}

// Check (doctor's) finds the state dir's relay reachable, refuses a
// certificate pinned wrong, and says when nothing is configured.
func TestCheckForDoctor(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	dir := t.TempDir()
	if _, err := relaysvc.Check(t.Context(), relaysvc.Options{StateDir: dir}); !errors.Is(err, relaysvc.ErrNotConfigured) {
		t.Fatalf("an empty state dir: %v", err)
	}
	d := spacesdtest.Start(t, spacesdtest.Options{Relay: relaysvc.Options{StateDir: dir}})
	attach(t, d, relay)
	detail, err := relaysvc.Check(t.Context(), relaysvc.Options{StateDir: dir})
	if err != nil || !strings.Contains(detail, "reachable") || !strings.Contains(detail, "computer box") {
		t.Fatalf("Check: %q %v", detail, err)
	}
	tokFile := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(tokFile, []byte(relay.Token), 0o600)
	wrong := "sha256:" + strings.Repeat("00", 32)
	if _, err := relaysvc.Check(t.Context(), relaysvc.Options{StateDir: dir, URLs: []string{relay.URL}, TokenFile: tokFile, Fingerprint: wrong}); err == nil {
		t.Fatal("Check trusted a certificate that is not the pinned one")
	}
}

// A pinned fingerprint is trust enough (no CA); a wrong one is refused.
// Several URLs are tried in turn: a dead first one does not stop the
// second.
func TestPinnedFingerprintAndURLsInTurn(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	d := spacesdtest.Start(t, spacesdtest.Options{})
	dead := "wss://" + closedAddr(t)
	var st api.RelayStatus
	if err := d.Client.JSON(t.Context(), http.MethodPut, api.PathRelay, nil,
		api.RelayAttachRequest{URLs: []string{dead, relay.URL}, Token: relay.Token, Fingerprint: relay.Fingerprint, WaitMS: 30000}, &st); err != nil {
		t.Fatal(err)
	}
	if !st.Connected || st.URL != relay.URL || st.Fingerprint != relay.Fingerprint {
		t.Fatalf("pinned, second URL: %+v", st)
	}
	wrong := "sha256:" + strings.Repeat("ab", 32)
	if err := d.Client.JSON(t.Context(), http.MethodPut, api.PathRelay, nil,
		api.RelayAttachRequest{URLs: []string{relay.URL}, Token: relay.Token, Fingerprint: wrong, WaitMS: 2000}, &st); err != nil {
		t.Fatal(err)
	}
	if st.Connected || !strings.Contains(st.LastError, "pinned") {
		t.Fatalf("a wrong pin: %+v", st)
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Bad PUT bodies are invalid_argument, and change nothing.
func TestAttachRefusesBadRequests(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	d := spacesdtest.Start(t, spacesdtest.Options{})
	user, _ := protocol.NewToken(protocol.TokenUser)
	for name, req := range map[string]api.RelayAttachRequest{
		"no url":          {Token: relay.Token},
		"https url":       {URLs: []string{"https://relay.example"}, Token: relay.Token},
		"no token":        {URLs: []string{relay.URL}},
		"a typo":          {URLs: []string{relay.URL}, Token: relay.Token[:len(relay.Token)-1] + "x"},
		"a user token":    {URLs: []string{relay.URL}, Token: user},
		"bad fingerprint": {URLs: []string{relay.URL}, Token: relay.Token, Fingerprint: "sha256:zz"},
		"bad CA":          {URLs: []string{relay.URL}, Token: relay.Token, CAPEM: "not pem"},
		"negative wait":   {URLs: []string{relay.URL}, Token: relay.Token, WaitMS: -1},
	} {
		err := d.Client.JSON(t.Context(), http.MethodPut, api.PathRelay, nil, req, nil)
		if api.KindOf(err) != api.KindInvalidArgument {
			t.Errorf("%s: %v, want invalid_argument", name, err)
		}
	}
	if st := status(t, d); st.Attached {
		t.Fatalf("a refused PUT attached: %+v", st)
	}
}

// PUT and DELETE /v1/relay called through the relay itself (an owner's
// grant) answer before the session that carries them is replaced or ends.
func TestAttachAndDetachThroughTheRelay(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	d := spacesdtest.Start(t, spacesdtest.Options{})
	attach(t, d, relay)
	rs := relay.next(t)
	owner := relayClient(t, relay, rs, "u-owner")
	var st api.RelayStatus
	if err := owner.JSON(t.Context(), http.MethodPut, api.PathRelay, nil,
		api.RelayAttachRequest{URLs: []string{relay.URL}, Token: relay.Token, CAPEM: relay.CAPEM}, &st); err != nil || !st.Attached {
		t.Fatalf("PUT through the relay: %+v %v", st, err)
	}
	rs2 := relay.next(t)
	eventually(t, "re-attached", func() bool { return status(t, d).Connected })
	var det api.RelayDetached
	if err := relayClient(t, relay, rs2, "u-owner").JSON(t.Context(), http.MethodDelete, api.PathRelay, nil, nil, &det); err != nil || !det.Detached {
		t.Fatalf("DELETE through the relay: %+v %v", det, err)
	}
	select {
	case <-rs2.ended:
	case <-time.After(time.Minute):
		t.Fatal("the session outlived a detach through it")
	}
	if st := status(t, d); st.Attached {
		t.Fatalf("still attached: %+v", st)
	}
}

// debugLogger shows the daemon's log when RELAY_DEBUG is set.
func debugLogger() *slog.Logger {
	if os.Getenv("RELAY_DEBUG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
