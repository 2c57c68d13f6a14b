package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
)

// TLS flags that contradict each other are refused before anything starts.
func TestServeRefusesBadTLSFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--tls-cert", "c.pem"},
		{"--tls-key", "k.pem"},
		{"--tls-self-signed", "--tls-cert", "c.pem", "--tls-key", "k.pem"},
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

// The real daemon with --tls-self-signed prints the fingerprint of a pair
// it makes in its state directory, serves HTTPS to a client that pins it,
// and reuses the pair after a restart; `cua-spacesd fingerprint` prints
// the same.
func TestServeSelfSigned(t *testing.T) {
	bin := buildDaemon(t)
	state := t.TempDir()
	start := func() (fingerprint, addr string, stop func()) {
		cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--token", "tls-token-7d1f", "--tls-self-signed", "--state-dir", state)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stop = func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }
		t.Cleanup(stop)
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			t.Fatalf("no fingerprint printed: %v", err)
		}
		_, rest, ok := strings.Cut(line, "certificate ")
		fingerprint, _, _ = strings.Cut(rest, " ")
		if !ok || !strings.HasPrefix(fingerprint, "sha256:") {
			t.Fatalf("printed %q, want the certificate's sha256", line)
		}
		addr, _ = listenAddrOf(t, stderr)
		return fingerprint, addr, stop
	}
	fp, addr, stop := start()
	c, err := client.New("https://"+addr, "tls-token-7d1f", client.WithTLS(client.TLS{Fingerprint: fp}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Capabilities(t.Context()); err != nil {
		t.Fatalf("a pinned client: %v", err)
	}
	stop()

	again, _, _ := start()
	if again != fp {
		t.Fatalf("after a restart the fingerprint is %s, was %s", again, fp)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"fingerprint", "--state-dir", state}, &out, &errOut); code != 0 || strings.TrimSpace(out.String()) != fp {
		t.Fatalf("cua-spacesd fingerprint: exit %d, %q %s; want %s", code, out.String(), errOut.String(), fp)
	}
	if _, err := api.ParseFingerprint(out.String()); err != nil {
		t.Fatal(err)
	}
}
