package registry_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// helperEnv makes the test binary act as a second bridge process that adds
// and removes Spaces in a loop.
const helperEnv = "CUA_REGISTRY_HELPER"

func TestMain(m *testing.M) {
	if home := os.Getenv(helperEnv); home != "" {
		os.Exit(hammer(home, os.Getenv("CUA_REGISTRY_PREFIX"), 40))
	}
	os.Exit(m.Run())
}

func hammer(home, prefix string, n int) int {
	r, err := registry.Open(home)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; i < n; i++ {
		name := prefix + strconv.Itoa(i)
		if _, err := r.Add(context.Background(), name, "127.0.0.1:"+strconv.Itoa(4000+i), "tok-"+name); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if i%2 == 1 {
			if err := r.Remove(name); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	}
	return 0
}

func TestAddResolveRemove(t *testing.T) {
	r, err := registry.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, s := range []struct{ name, url, tok string }{
		{"alpha", "127.0.0.1:3211", "ta"},
		{"alpine", "http://127.0.0.1:3212/", "tb"},
		{"beta", "https://example.invalid:3211", ""},
	} {
		if _, err := r.Add(ctx, s.name, s.url, s.tok); err != nil {
			t.Fatalf("add %s: %v", s.name, err)
		}
	}
	tests := []struct {
		id       string
		wantName string
		wantTok  string
		wantKind api.Kind
	}{
		{id: "alpha", wantName: "alpha", wantTok: "ta"},
		{id: "alpi", wantName: "alpine", wantTok: "tb"},
		{id: "al", wantKind: api.KindAmbiguousSandbox},
		{id: "gamma", wantKind: api.KindNotFound},
		{id: "", wantKind: api.KindInvalidArgument},
		{id: "direct:127.0.0.1:3212", wantName: "alpine", wantTok: "tb"},
		{id: "direct:127.0.0.1:9", wantName: "direct:127.0.0.1:9"},
		{id: "direct:nonsense", wantKind: api.KindInvalidArgument},
		// Without a relay login a relay id names no registered Space: it
		// asks for the login (relay_test.go resolves them logged in).
		{id: "relay:beta", wantKind: api.KindUnauthenticated},
		{id: "relay:-bad", wantKind: api.KindInvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			e, err := r.Resolve(tc.id)
			if tc.wantKind != "" {
				if got := api.KindOf(err); got != tc.wantKind {
					t.Fatalf("Resolve(%q) kind = %q (%v), want %q", tc.id, got, err, tc.wantKind)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tc.id, err)
			}
			if e.Name != tc.wantName || e.Token != tc.wantTok {
				t.Fatalf("Resolve(%q) = %+v, want name %q token %q", tc.id, e, tc.wantName, tc.wantTok)
			}
		})
	}
	if e, _ := r.Resolve("alpine"); e.URL != "http://127.0.0.1:3212" {
		t.Fatalf("url not normalized: %q", e.URL)
	}
	if err := r.Remove("alpha"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Resolve("alpha"); api.KindOf(err) != api.KindNotFound {
		t.Fatalf("after remove: %v", err)
	}
	if err := r.Remove("alpha"); api.KindOf(err) != api.KindNotFound {
		t.Fatalf("second remove: %v", err)
	}
}

func TestFilesAndModes(t *testing.T) {
	home := t.TempDir()
	r, err := registry.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Add(t.Context(), "s1", "127.0.0.1:3211", "secret-token"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(home, registry.TokensFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("tokens file mode %v, want 0600", fi.Mode().Perm())
	}
	b, err := os.ReadFile(filepath.Join(home, registry.SpacesFile))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !contains(s, "s1") || contains(s, "secret-token") {
		t.Fatalf("spaces file must name the Space and hold no token:\n%s", s)
	}
}

func TestInvalidAdd(t *testing.T) {
	r, err := registry.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, url string }{
		{"ok", ""},
		{"ok", "ftp://x:1"},
		{"bad name", "127.0.0.1:1"},
		{"-x", "127.0.0.1:1"},
	} {
		if _, err := r.Add(t.Context(), tc.name, tc.url, ""); api.KindOf(err) != api.KindInvalidArgument {
			t.Errorf("Add(%q, %q) = %v, want invalid_argument", tc.name, tc.url, err)
		}
	}
	e, err := r.Add(t.Context(), "", "127.0.0.1:3211", "")
	if err != nil || e.Name != "127.0.0.1-3211" {
		t.Fatalf("derived name: %+v %v", e, err)
	}
}

// TestConcurrentBridges runs two extra processes and goroutines with their
// own Registry values on one home: no change may be lost and the files must
// always parse.
func TestConcurrentBridges(t *testing.T) {
	home := t.TempDir()
	const perWriter = 40
	var cmds []*exec.Cmd
	for _, p := range []string{"p", "q"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"="+home, "CUA_REGISTRY_PREFIX="+p)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	var wg sync.WaitGroup
	errs := make(chan int, 2)
	for _, p := range []string{"g", "h"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- hammer(home, p, perWriter)
		}()
	}
	// A reader in parallel must always see parseable files.
	r, err := registry.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	readerDone := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				readerDone <- nil
				return
			default:
			}
			if _, err := r.List(); err != nil {
				readerDone <- err
				return
			}
		}
	}()
	wg.Wait()
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
	}
	close(stop)
	if err := <-readerDone; err != nil {
		t.Fatalf("reader: %v", err)
	}
	close(errs)
	for rc := range errs {
		if rc != 0 {
			t.Fatalf("goroutine writer failed")
		}
	}
	list, err := r.List()
	if err != nil {
		t.Fatal(err)
	}
	// Each writer keeps its even-numbered Spaces.
	if want := 4 * perWriter / 2; len(list) != want {
		t.Fatalf("got %d spaces, want %d", len(list), want)
	}
	for _, e := range list {
		if e.Token != "tok-"+e.Name {
			t.Fatalf("space %s has token %q", e.Name, e.Token)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// A Space whose URL cannot be dialled (as a relay Space's cannot) is still
// reached when the registry's client factory says how: every client of the
// registry comes from it.
func TestClientFactoryReachesTheSpace(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	daemonAddr := strings.TrimPrefix(d.URL, "http://")
	var asked []string
	viaDaemon := func(e registry.Entry) (*client.Client, error) {
		asked = append(asked, e.Name)
		return client.New(e.URL, e.Token, client.WithDialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
			var nd net.Dialer
			return nd.DialContext(ctx, network, daemonAddr)
		}))
	}
	home := t.TempDir()
	plain, err := registry.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Add(t.Context(), "far", "http://127.0.0.1:1", d.Token); err != nil {
		t.Fatal(err)
	}
	c, _, err := plain.Client("far")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Capabilities(t.Context()); err == nil {
		t.Fatal("the plain client reached a Space at 127.0.0.1:1")
	}
	r, err := registry.Open(home, registry.WithClients(viaDaemon))
	if err != nil {
		t.Fatal(err)
	}
	c, e, err := r.Client("far")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Capabilities(t.Context()); err != nil {
		t.Fatalf("through the factory: %v", err)
	}
	if _, err := r.ClientFor(registry.Entry{Name: "unregistered", URL: e.URL, Token: e.Token}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(asked, ",") != "far,unregistered" {
		t.Fatalf("factory asked for %v", asked)
	}
}
