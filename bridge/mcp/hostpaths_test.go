package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/registry"
)

// The MCP tools read and write host paths only under the bridge's roots,
// never in $CUA_HOME (the registry holds every Space's token), whatever
// symlink or ".." leads there; the root here holds the registry home, as a
// user's home folder holds ~/.cua.
func TestHostPathsConfinedToRoots(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	home := e.reg.Dir()
	root := filepath.Dir(home)
	tokens := filepath.Join(home, registry.TokensFile)
	// Every t.TempDir() is inside the root: the outside is made apart.
	outside, err := os.MkdirTemp("", "outside-root-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	secret := filepath.Join(outside, "secret.txt")
	os.WriteFile(secret, []byte("secret"), 0o600)
	local := t.TempDir()
	for link, target := range map[string]string{"to-tokens": tokens, "to-outside": outside, "to-secret": secret, "to-home": home} {
		if err := os.Symlink(target, filepath.Join(local, link)); err != nil {
			t.Fatal(err)
		}
	}
	space := t.TempDir()

	for _, tc := range []struct {
		name, tool, path, dest, mention string
	}{
		{"read the registry's tokens", "upload", tokens, space + "/", "$CUA_HOME"},
		{"read them through a symlink", "upload", filepath.Join(local, "to-tokens"), space + "/", "$CUA_HOME"},
		{"read them through a folder", "upload", filepath.Join(local, "to-home", registry.TokensFile), space + "/", "$CUA_HOME"},
		{"read the root, which holds the registry", "upload", root, space + "/all", "$CUA_HOME"},
		{"read outside", "upload", secret, space + "/", "outside the folders"},
		{"read outside through a symlink", "upload", filepath.Join(local, "to-secret"), space + "/", "outside the folders"},
		{"read outside with ..", "upload", filepath.Join(root, "..", filepath.Base(outside), "secret.txt"), space + "/", "outside the folders"},
		{"write into the registry", "download", "", filepath.Join(home, "planted.json"), "$CUA_HOME"},
		{"write outside", "download", "", filepath.Join(outside, "planted.txt"), "outside the folders"},
		{"write outside through a symlink", "download", "", filepath.Join(local, "to-outside", "planted.txt"), "outside the folders"},
		{"write outside, making folders", "download", "", filepath.Join(outside, "new", "planted.txt"), "outside the folders"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"space": "s1", "path": tc.path, "dest": tc.dest}
			if tc.tool == "download" {
				src := filepath.Join(space, "payload.txt")
				os.WriteFile(src, []byte("payload"), 0o644)
				args["path"] = src
			}
			r := call(t, cs, tc.tool, args)
			if k := errKind(t, r); k != string(api.KindInvalidArgument) || !strings.Contains(text(r), tc.mention) {
				t.Fatalf("kind %s: %s", k, text(r))
			}
			if tc.mention == "outside the folders" && !strings.Contains(text(r), root) {
				t.Fatalf("the error does not name the allowed root %s: %s", root, text(r))
			}
		})
	}
	// Nothing crossed: no token reached the Space, nothing was planted.
	filepath.Walk(space, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && fi.Name() != "payload.txt" {
			t.Errorf("%s reached the Space", p)
		}
		return nil
	})
	for _, p := range []string{filepath.Join(home, "planted.json"), filepath.Join(outside, "planted.txt"), filepath.Join(outside, "new")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}

	// Inside the root, the same tools work; a relative path is taken in
	// the root.
	rel, err := filepath.Rel(root, filepath.Join(local, "ok.txt"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(local, "ok.txt"), []byte("ok"), 0o644)
	if r := call(t, cs, "upload", map[string]any{"space": "s1", "path": rel, "dest": space + "/"}); r.IsError {
		t.Fatalf("upload of %s in the root: %s", rel, text(r))
	}
	if r := call(t, cs, "download", map[string]any{"space": "s1", "path": filepath.Join(space, "ok.txt"), "dest": filepath.Join(local, "sub", "ok.txt")}); r.IsError {
		t.Fatalf("download into the root: %s", text(r))
	}
}

// pathsOut is the path a refusal names, before what it says of it.
var pathsOut = regexp.MustCompile(`path .* is outside`)

// add_space's ca_file is a host path like upload's: confined to the roots,
// never in $CUA_HOME, and a path outside them is refused with the same kind
// and message whether it exists or not (the tool read any file, and its two
// messages told which paths existed). Upload's refusal says no more.
func TestAddSpaceCAFileConfined(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	home := e.reg.Dir()
	tokens := filepath.Join(home, registry.TokensFile)
	outside, err := os.MkdirTemp("", "outside-root-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	secret := filepath.Join(outside, "secret.pem")
	os.WriteFile(secret, []byte("secret"), 0o600)
	local := t.TempDir()
	os.Symlink(tokens, filepath.Join(local, "to-tokens"))
	os.Symlink(filepath.Join(outside, "gone.pem"), filepath.Join(local, "dangling-out"))
	os.Symlink(secret, filepath.Join(local, "to-secret"))

	addSpace := func(caFile string) *sdk.CallToolResult {
		return call(t, cs, "add_space", map[string]any{"url": "https://127.0.0.1:1", "name": "ca", "ca_file": caFile})
	}
	refusal := func(tool, p string) string {
		t.Helper()
		var r *sdk.CallToolResult
		if tool == "add_space" {
			r = addSpace(p)
		} else {
			r = call(t, cs, "upload", map[string]any{"space": "s1", "path": p, "dest": t.TempDir() + "/"})
		}
		if k := errKind(t, r); k != string(api.KindInvalidArgument) {
			t.Fatalf("%s %s: kind %s: %s", tool, p, k, text(r))
		}
		return text(r)
	}
	for _, p := range []string{tokens, filepath.Join(local, "to-tokens")} {
		if msg := refusal("add_space", p); !strings.Contains(msg, "$CUA_HOME") {
			t.Fatalf("ca_file %s: %s", p, msg)
		}
	}
	// Pairs that differ only in whether the path outside exists.
	for _, tool := range []string{"add_space", "upload"} {
		for _, pair := range [][2]string{
			{secret, filepath.Join(outside, "gone.pem")},
			{secret, filepath.Join(outside, "no", "such", "dir.pem")},
			{filepath.Join(secret, "x"), filepath.Join(outside, "gone.pem", "x")},
			{filepath.Join(local, "to-secret"), filepath.Join(local, "dangling-out")},
		} {
			there, missing := refusal(tool, pair[0]), refusal(tool, pair[1])
			if !strings.Contains(there, "outside the folders") {
				t.Fatalf("%s %s: %s", tool, pair[0], there)
			}
			// The paths aside (through a link, the message names where it
			// leads), the two say the same.
			if pathsOut.ReplaceAllString(there, "P") != pathsOut.ReplaceAllString(missing, "P") {
				t.Fatalf("%s tells an existing path outside from a missing one:\n%s\n%s", tool, there, missing)
			}
		}
	}
	if _, err := e.reg.Resolve("ca"); api.KindOf(err) != api.KindNotFound {
		t.Fatalf("a refused Space was registered: %v", err)
	}
	// Inside the roots, a missing file is simply not there, and a file that
	// holds no certificate says so.
	if r := addSpace(filepath.Join(local, "none.pem")); errKind(t, r) != string(api.KindNotFound) {
		t.Fatalf("a missing CA file in the roots: %s", text(r))
	}
	os.WriteFile(filepath.Join(local, "plain.pem"), []byte("not a certificate"), 0o600)
	if r := addSpace(filepath.Join(local, "plain.pem")); errKind(t, r) != string(api.KindInvalidArgument) || !strings.Contains(text(r), "no PEM certificate") {
		t.Fatalf("a CA file without certificates: %s", text(r))
	}
}

// A device or FIFO is not a file to copy: /dev/zero would be hashed
// forever, a FIFO blocks its first read, /dev/null would land as an empty
// file.
func TestUploadRefusesSpecialFiles(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	dest := t.TempDir()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	r := call(t, cs, "upload", map[string]any{"space": "s1", "path": fifo, "dest": filepath.Join(dest, "fifo")})
	if k := errKind(t, r); k != string(api.KindInvalidArgument) || !strings.Contains(text(r), "FIFO") {
		t.Fatalf("kind %s: %s", k, text(r))
	}
	if _, err := os.Lstat(filepath.Join(dest, "fifo")); err == nil {
		t.Fatal("the FIFO landed in the Space")
	}
}

// A folder's symlinks that stay inside it come down as the same symlinks
// (relative, to a folder, to the folder itself, dangling, a loop), never
// followed.
// The rest are skipped and listed with the reason: absolute ones (to /etc,
// into $CUA_HOME, to a file of this machine), ones that climb out with
// "..", and ones that climb out through another link of the folder (here
// "anc", a link to the folder's own top, which the text "anc/../x" hides).
func TestDownloadKeepsOnlySymlinksInside(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	src := filepath.Join(t.TempDir(), "tree")
	if err := os.MkdirAll(filepath.Join(src, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "a", "one.txt"), []byte("1"), 0o644)
	victim := filepath.Join(t.TempDir(), "victim.txt")
	os.WriteFile(victim, []byte("mine"), 0o644)
	kept := map[string]string{"rel": "a/one.txt", "dir": "a", "dangling": "no/such", "a/up": "../rel",
		"a/b/top": "../..", "a/b/via": "../../rel", "a/anc": "..", "loop1": "a/../loop2", "loop2": "loop1"}
	skipped := map[string]string{
		"etc": "/etc", "home": e.reg.Dir(), "tokens": filepath.Join(e.reg.Dir(), registry.TokensFile), "abs": victim,
		"esc": "../x", "a/esc": "../../x", "a/b/esc": "../../../..", "deep": "a/b/../../../x",
		"through": "a/anc/../x", "chain": "etc/passwd",
	}
	for _, m := range []map[string]string{kept, skipped} {
		for name, target := range m {
			if err := os.Symlink(target, filepath.Join(src, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	local := t.TempDir()
	r := call(t, cs, "download", map[string]any{"space": "s1", "path": src, "dest": local})
	if r.IsError {
		t.Fatal(text(r))
	}
	var res struct {
		Dest                  string
		Files, Links, Skipped int
		SkippedEntries        []struct{ Path, Reason, Target string } `json:"skipped_entries"`
	}
	structured(t, r, &res)
	if res.Files != 1 || res.Links != len(kept) || res.Skipped != len(skipped) || len(res.SkippedEntries) != len(skipped) {
		t.Fatalf("files %d links %d skipped %d: %s", res.Files, res.Links, res.Skipped, text(r))
	}
	if !strings.Contains(text(r), "skipped (absolute symlinks, symlinks leading out of the folder)") {
		t.Fatalf("the text does not say what was skipped: %s", text(r))
	}
	for name, target := range kept {
		got, err := os.Readlink(filepath.Join(res.Dest, name))
		if err != nil || got != target {
			t.Errorf("%s: %q %v, want a link to %q", name, got, err, target)
		}
	}
	for _, sk := range res.SkippedEntries {
		want := "symlink_outside_folder"
		if filepath.IsAbs(skipped[sk.Path]) {
			want = "absolute_symlink"
		}
		if target, ok := skipped[sk.Path]; !ok || sk.Target != target || sk.Reason != want {
			t.Errorf("skipped %+v; want %s, target %q", sk, want, target)
		}
		if _, err := os.Lstat(filepath.Join(res.Dest, sk.Path)); err == nil {
			t.Errorf("%s was made", sk.Path)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "mine" {
		t.Fatal("the file an absolute link names was written")
	}
}

// A hostile listing cannot make the bridge write through a link: entries
// below a symlink (which the daemon never lists) are refused before
// anything is written.
func TestDownloadNeverWritesThroughALink(t *testing.T) {
	e := newEnv(t)
	outside := t.TempDir()
	src := filepath.Join(t.TempDir(), "tree")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "x"), []byte("owned"), 0o644)
	hostileSpace(t, e, func(l *api.ListResult) {
		l.Entries = append(l.Entries,
			api.FileInfo{Path: src + "/esc", Name: "esc", Type: api.TypeSymlink, Target: outside},
			api.FileInfo{Path: src + "/esc/x", Name: "x", Type: api.TypeFile, Size: 5})
	})
	cs := e.client(t, nil)
	r := call(t, cs, "download", map[string]any{"space": "hostile", "path": src, "dest": t.TempDir()})
	if k := errKind(t, r); k != string(api.KindTransferFailed) || !strings.Contains(text(r), "not below a listed folder") {
		t.Fatalf("kind %s: %s", k, text(r))
	}
	if _, err := os.Lstat(filepath.Join(outside, "x")); err == nil {
		t.Fatal("the listing wrote through the symlink")
	}
}

// Cancelling an upload stops the hashing of its source too: a huge file
// (sparse, 1 TiB) is not read to its end after the caller went away.
func TestCancelStopsUploadHashing(t *testing.T) {
	e := newEnv(t)
	src := filepath.Join(t.TempDir(), "huge.bin")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil {
		t.Skipf("no sparse 1 TiB file here: %v", err)
	}
	f.Close()
	var hashing atomic.Bool
	started := make(chan struct{})
	cs := e.client(t, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		if strings.HasPrefix(r.Params.Message, "sha256") && r.Params.Progress > 0 && !hashing.Swap(true) {
			close(started)
		}
	}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		p := &sdk.CallToolParams{Name: "upload", Arguments: map[string]any{"space": "s1", "path": src, "dest": t.TempDir() + "/"}}
		p.SetProgressToken("hash")
		_, err := cs.CallTool(ctx, p)
		done <- err
	}()
	<-started
	cancel()
	<-done
	eventually(t, "the bridge closes the file it was hashing", func() bool { return !fdOpenOn(t, src) })
}

// fdOpenOn reports whether this process holds a descriptor on p.
func fdOpenOn(t testing.TB, p string) bool {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && target == p {
			return true
		}
	}
	return false
}
