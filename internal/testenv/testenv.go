// Package testenv holds what the tests of every package share, on the
// standard library alone so that any package may import it: the rule for a
// component a test needs and does not find (skip here, fail in CI), a
// buffer a writer and the test share, and a server on a loopback port.
package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
)

// CI reports whether the tests run under CI=true, where every component a
// test needs is installed (.ci/run installs them), so a missing one is a
// failure, not a reason to skip.
func CI() bool { return os.Getenv("CI") == "true" }

// Missing ends a test that cannot run here because a component it needs
// (a tool, a library, a right such as root) is missing, as the message
// says: it skips the test, and under CI=true fails it, since CI must run
// every test.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("%s; under CI=true every test must run (.ci/run installs what they need)", msg)
	}
	t.Skip(msg)
}

// SyncBuffer is a bytes.Buffer that a writer (a logger, a command's
// output) and the test reading it may use at once.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Serve runs serve on a listener of its own on 127.0.0.1 (a free port, so
// tests run side by side) and answers its address. stop ends serve's
// context, waits for serve to return and answers what it returned; it runs
// at the end of the test too, where an error fails the test. Calling stop
// again answers the same.
func Serve(t testing.TB, serve func(context.Context, net.Listener) error) (addr string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln) }()
	stop = sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("serve on %s: %v", ln.Addr(), err)
		}
	})
	return ln.Addr().String(), stop
}

// ServeHTTP serves h (a stand-in for some other server) on 127.0.0.1 until
// the test ends, and answers its base URL ("http://127.0.0.1:port").
func ServeHTTP(t testing.TB, h http.Handler) string {
	t.Helper()
	addr, _ := Serve(t, func(ctx context.Context, ln net.Listener) error {
		srv := &http.Server{Handler: h}
		// Close, not Shutdown: a stand-in's open requests end with the test.
		defer context.AfterFunc(ctx, func() { _ = srv.Close() })()
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	return "http://" + addr
}
