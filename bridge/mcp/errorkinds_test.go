package mcp_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/tools"
)

// documentedKinds are the kinds docs/tools.md lists for each tool, from
// the same definitions the document is generated from.
var documentedKinds = sync.OnceValue(func() map[string][]string {
	out := map[string][]string{}
	for _, tl := range tools.Defs(nil) {
		out[tl.Name] = kindsOf(tl)
	}
	return out
})

// checkKind holds every failed call that goes through call to its tool's
// documented kinds: a test that drives a tool into a failure its list
// lacks fails here, so the lists grow with what the tests see.
func checkKind(t testing.TB, name string, res *sdk.CallToolResult) {
	t.Helper()
	if !res.IsError {
		return
	}
	var s struct{ Error struct{ Kind string } }
	structured(t, res, &s)
	kinds, known := documentedKinds()[name]
	if known && s.Error.Kind != "" && !slices.Contains(kinds, s.Error.Kind) {
		t.Errorf("%s failed with kind %s, which docs/tools.md does not list for it (%v): add it to the tool's Errors", name, s.Error.Kind, kinds)
	}
}

// Each tool is driven into the failures its list once lacked, on a real
// daemon through a real bridge, and the kind it answers must be listed.
func TestToolErrorListsHoldTheirFailures(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	space := t.TempDir()
	existing := filepath.Join(space, "existing")
	if err := os.WriteFile(existing, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), "new")
	if err := os.WriteFile(local, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The upload tool refuses an existing destination itself, before any
	// work; the Space answers precondition_failed when the destination
	// appears after that check (another writer in the Space). A proxy in
	// front of the real daemon makes that writer come at the one moment
	// between the two, so that the race is not left to chance.
	appeared := filepath.Join(space, "appeared")
	target, err := url.Parse(e.daemon.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	racy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == api.PathUploads {
			if err := os.WriteFile(appeared, []byte("another writer's"), 0o644); err != nil {
				t.Error(err)
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(racy.Close)
	if _, err := e.reg.Add(t.Context(), "racy", racy.URL, e.daemon.Token); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tool string
		args map[string]any
		want string
	}{
		{"upload onto a file that appeared meanwhile, without overwrite", "upload",
			map[string]any{"space": "racy", "path": local, "dest": appeared, "overwrite": false}, "precondition_failed"},
		{"upload onto an existing file without overwrite", "upload",
			map[string]any{"space": "s1", "path": local, "dest": existing, "overwrite": false}, "invalid_argument"},
		{"read a file the daemon may not read", "space_read",
			map[string]any{"space": "s1", "path": unreadableFile(t)}, "permission_denied"},
		{"write where the daemon may not write", "space_write",
			map[string]any{"space": "s1", "path": unwritablePath(t), "content": "x"}, "permission_denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, cs, tc.tool, tc.args)
			if got := errKind(t, r); got != tc.want {
				t.Fatalf("%s answered kind %q (%s), want %q", tc.tool, got, text(r), tc.want)
			}
			if !slices.Contains(documentedKinds()[tc.tool], tc.want) {
				t.Fatalf("%s answers %s, which its documented kinds %v lack", tc.tool, tc.want, documentedKinds()[tc.tool])
			}
		})
	}
	for p, want := range map[string]string{existing: "old", appeared: "another writer's"} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("an upload without overwrite changed %s: %q, %v", p, b, err)
		}
	}
}

// unreadableFile is a file the test daemon (this process) may not read.
// Root reads any file whatever its mode, except the sysctls the kernel
// makes write-only for everyone: compact_memory is one.
func unreadableFile(t *testing.T) string {
	t.Helper()
	if os.Geteuid() == 0 {
		const p = "/proc/sys/vm/compact_memory"
		if _, err := os.Lstat(p); err != nil {
			t.Fatalf("as root, the test reads %s, which the kernel refuses to root: %v", p, err)
		}
		return p
	}
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte("x"), 0o000); err != nil {
		t.Fatal(err)
	}
	return p
}

// unwritablePath is a path the test daemon may not write. Root writes
// anywhere the modes say no, so for root it is a symlink owned by another
// user to root's file, which the daemon refuses to follow.
func unwritablePath(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
		return filepath.Join(dir, "file")
	}
	target := filepath.Join(dir, "roots")
	if err := os.WriteFile(target, []byte("root's"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 65534, 65534); err != nil { // nobody
		t.Fatal(err)
	}
	return link
}
