package testenv_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/trycua/cua-spacesd/internal/testenv"
)

// childEnv makes a test run as the child of runChild: the helper under
// test then ends it for real.
const childEnv = "TESTENV_CHILD"

// runChild runs test again in a child test binary, with env, and answers
// whether it failed and what it printed.
func runChild(t *testing.T, test string, env ...string) (failed bool, out string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v")
	cmd.Env = append(append(os.Environ(), childEnv+"=1"), env...)
	b, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return err != nil, string(b)
}

// TestMissing: a missing component skips the test, and fails it under
// CI=true.
func TestMissing(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		testenv.Missing(t, "frobnicator %d is not installed", 7)
		t.Fatal("Missing returned")
	}
	for _, tc := range []struct {
		ci, want string
		fails    bool
	}{
		{"", "--- SKIP: TestMissing", false},
		{"false", "--- SKIP: TestMissing", false},
		{"true", "--- FAIL: TestMissing", true},
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			failed, out := runChild(t, "TestMissing", "CI="+tc.ci)
			if failed != tc.fails || !strings.Contains(out, tc.want) || !strings.Contains(out, "frobnicator 7 is not installed") {
				t.Fatalf("CI=%q: failed %v, output:\n%s\nwant %q and the message", tc.ci, failed, out, tc.want)
			}
		})
	}
}

// A writer and a reader at once (run with -race).
func TestSyncBuffer(t *testing.T) {
	var b testenv.SyncBuffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := len(b.String()); got != 400 {
		t.Fatalf("%d bytes, want 400", got)
	}
}

// Serve's stop ends serve's context and answers its error, the same each
// time; an error left at the end fails the test.
func TestServe(t *testing.T) {
	boom := errors.New("boom")
	if os.Getenv(childEnv) != "" {
		_, _ = testenv.Serve(t, func(ctx context.Context, ln net.Listener) error {
			<-ctx.Done()
			return boom
		})
		return
	}
	if failed, out := runChild(t, "TestServe"); !failed || !strings.Contains(out, "boom") {
		t.Fatalf("a serve that ended with an error: failed %v, output:\n%s", failed, out)
	}

	addr, stop := testenv.Serve(t, func(ctx context.Context, ln net.Listener) error {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_ = c.Close()
			}
		}()
		<-ctx.Done()
		return ln.Close()
	})
	if host, _, _ := net.SplitHostPort(addr); host != "127.0.0.1" {
		t.Fatalf("served on %s, want 127.0.0.1", addr)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("stop again: %v", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Fatal("still listening after stop")
	}
}

// ServeHTTP serves a handler on loopback.
func TestServeHTTP(t *testing.T) {
	url := testenv.ServeHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "hello")
	}))
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "hello" {
		t.Fatalf("answer %q", b)
	}
}
