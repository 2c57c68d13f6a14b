package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/spacesd/doctor"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// TLS flags that contradict each other are refused before anything starts.
func TestServeRefusesBadTLSFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--tls-cert", "c.pem"},
		{"--tls-key", "k.pem"},
		{"--tls-self-signed", "--tls-cert", "c.pem", "--tls-key", "k.pem"},
		{"--tls-renew"},
		{"--tls-renew", "--tls-cert", "c.pem", "--tls-key", "k.pem"},
	} {
		var stderr bytes.Buffer
		if code := run(append([]string{"serve", "--listen", "127.0.0.1:0"}, args...), &stderr, &stderr); code != 2 {
			t.Errorf("serve %v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
	var out bytes.Buffer
	if code := run([]string{"serve", "--listen", "127.0.0.1:0", "--tls-self-signed", "--state-dir", ""}, &out, &out); code != 1 || !strings.Contains(out.String(), "give --state-dir") {
		t.Errorf("--tls-self-signed without a state directory: exit %d, %s", code, out.String())
	}
}

// selfSignedDaemon starts the real daemon with --tls-self-signed on state
// (and args), and answers the fingerprint it printed first, its address,
// all it printed, and its log up to the address.
type selfSignedDaemon struct {
	fingerprint, addr, printed, logged string
	stop                               func()
}

func startSelfSigned(t *testing.T, bin, state string, args ...string) selfSignedDaemon {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--token", "tls-token-7d1f",
		"--tls-self-signed", "--state-dir", state, "--display", "", "--media-port", "0"}, args...)...)
	// A file, not a pipe: what the daemon printed before it logged its
	// address is all there when the address is read.
	out, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout = out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := selfSignedDaemon{stop: func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }}
	t.Cleanup(d.stop)
	d.addr, d.logged = listenAddrOf(t, stderr)
	b, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	d.printed = string(b)
	line, _, _ := strings.Cut(d.printed, "\n")
	_, rest, ok := strings.Cut(line, "certificate ")
	d.fingerprint, _, _ = strings.Cut(rest, " ")
	if !ok || !strings.HasPrefix(d.fingerprint, "sha256:") {
		t.Fatalf("printed %q, want the certificate's sha256", d.printed)
	}
	return d
}

// pinnedCall reaches the daemon with a client that pins fingerprint.
func pinnedCall(t *testing.T, addr, fingerprint string) error {
	t.Helper()
	c, err := client.New("https://"+addr, "tls-token-7d1f", client.WithTLS(client.TLS{Fingerprint: fingerprint}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Capabilities(t.Context())
	return err
}

// The real daemon with --tls-self-signed prints the fingerprint of a pair
// it makes in its state directory, serves HTTPS to a client that pins it,
// and reuses the pair after a restart; `cua-spacesd fingerprint` prints
// the same.
func TestServeSelfSigned(t *testing.T) {
	bin := buildDaemon(t)
	state := t.TempDir()
	d := startSelfSigned(t, bin, state)
	fp := d.fingerprint
	if err := pinnedCall(t, d.addr, fp); err != nil {
		t.Fatalf("a pinned client: %v", err)
	}
	// The leaf certificate given as the CA file (--ca-file) is trusted too.
	c, err := client.New("https://"+d.addr, "tls-token-7d1f",
		client.WithTLS(client.TLS{CAFile: filepath.Join(state, server.SelfSignedDir, server.SelfSignedCert)}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Capabilities(t.Context()); err != nil {
		t.Fatalf("a client given cert.pem as its CA file: %v", err)
	}
	d.stop()

	again := startSelfSigned(t, bin, state)
	if again.fingerprint != fp {
		t.Fatalf("after a restart the fingerprint is %s, was %s", again.fingerprint, fp)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"fingerprint", "--state-dir", state}, &out, &errOut); code != 0 || strings.TrimSpace(out.String()) != fp {
		t.Fatalf("cua-spacesd fingerprint: exit %d, %q %s; want %s", code, out.String(), errOut.String(), fp)
	}
	if _, err := api.ParseFingerprint(out.String()); err != nil {
		t.Fatal(err)
	}
}

// A pair an older daemon made as its own CA keeps serving with the
// fingerprint the bridges pinned, and the daemon's output, its log and
// doctor warn about it; --tls-renew replaces it with a leaf and prints the
// new fingerprint, which a client then pins; a second --tls-renew keeps
// the leaf.
func TestServeSelfSignedCAPair(t *testing.T) {
	bin := buildDaemon(t)
	state := t.TempDir()
	old := api.CertFingerprint(tlstest.WriteCAPair(t, filepath.Join(state, server.SelfSignedDir)).Raw)

	d := startSelfSigned(t, bin, state)
	if d.fingerprint != old {
		t.Fatalf("serving %s, want the old pair's %s", d.fingerprint, old)
	}
	if err := pinnedCall(t, d.addr, old); err != nil {
		t.Fatalf("the old pin: %v", err)
	}
	if !strings.Contains(d.printed, "warning") || !strings.Contains(d.printed, "--tls-renew") {
		t.Errorf("the daemon printed no warning of the CA pair:\n%s", d.printed)
	}
	if !strings.Contains(d.logged, `"level":"WARN","msg":"the self-signed TLS certificate is a CA`) {
		t.Errorf("the log holds no warning of the CA pair:\n%s", d.logged)
	}
	if got := doctorTLS(t, state); got.Status != doctor.Warn || !strings.Contains(got.Detail, old) || !strings.Contains(got.Fix, "--tls-renew") {
		t.Errorf("doctor: %+v, want a warning naming %s and --tls-renew", got, old)
	}
	d.stop()

	renewed := startSelfSigned(t, bin, state, "--tls-renew")
	fp := renewed.fingerprint
	if fp == old || !strings.Contains(renewed.printed, "renewed") || !strings.Contains(renewed.printed, "--fingerprint "+fp) {
		t.Fatalf("--tls-renew printed:\n%s\nwant a new fingerprint (old %s)", renewed.printed, old)
	}
	if strings.Contains(renewed.printed, "warning") || strings.Contains(renewed.logged, "is a CA") {
		t.Errorf("a renewed pair still warned about:\n%s\n%s", renewed.printed, renewed.logged)
	}
	if err := pinnedCall(t, renewed.addr, fp); err != nil {
		t.Fatalf("the new pin: %v", err)
	}
	if err := pinnedCall(t, renewed.addr, old); err == nil {
		t.Fatal("the old pin still reaches the renewed daemon")
	}
	if got := doctorTLS(t, state); got.Status != doctor.Pass || !strings.Contains(got.Detail, fp) {
		t.Errorf("doctor after renewal: %+v, want pass naming %s", got, fp)
	}
	renewed.stop()

	if again := startSelfSigned(t, bin, state, "--tls-renew"); again.fingerprint != fp {
		t.Fatalf("--tls-renew replaced a leaf pair: %s, was %s", again.fingerprint, fp)
	}
}

// doctorTLS runs `cua-spacesd doctor --json` on state and answers its
// check of the self-signed pair.
func doctorTLS(t *testing.T, state string) doctor.Result {
	t.Helper()
	var out, errOut bytes.Buffer
	run([]string{"doctor", "--json", "--display", "", "--state-dir", state}, &out, &errOut)
	var rep doctor.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s%s", err, out.String(), errOut.String())
	}
	for _, c := range rep.Checks {
		if c.Name == "tls self-signed" {
			return c
		}
	}
	t.Fatalf("doctor has no check of the self-signed pair:\n%s", out.String())
	return doctor.Result{}
}
