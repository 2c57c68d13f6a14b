package hostfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/hostfs"
)

// tree is a confinement fixture: a root folder holding a file, a folder
// and the bridge's home (denied), next to an outside folder with a secret.
type tree struct {
	root, home, outside string
	h                   *hostfs.FS
}

func newTree(t *testing.T) *tree {
	t.Helper()
	base := t.TempDir()
	tr := &tree{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	tr.home = filepath.Join(tr.root, "cua-home")
	for _, d := range []string{tr.root, tr.outside, tr.home, filepath.Join(tr.root, "dir")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(tr.root, "dir", "ok.txt"), "ok")
	write(t, filepath.Join(tr.outside, "secret"), "secret")
	write(t, filepath.Join(tr.home, "tokens.json"), "tokens")
	h, err := hostfs.Confined([]string{tr.root}, hostfs.Deny{Path: tr.home, What: "$CUA_HOME"})
	if err != nil {
		t.Fatal(err)
	}
	tr.h = h
	return tr
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func wantRefused(t *testing.T, err error, mention string) {
	t.Helper()
	if api.KindOf(err) != api.KindInvalidArgument || !strings.Contains(err.Error(), mention) {
		t.Fatalf("want invalid_argument mentioning %q, got %v", mention, err)
	}
}

func TestConfinedReadsOnlyUnderItsRoots(t *testing.T) {
	tr := newTree(t)
	symlink(t, filepath.Join(tr.outside, "secret"), filepath.Join(tr.root, "to-secret"))
	symlink(t, tr.outside, filepath.Join(tr.root, "to-outside"))
	symlink(t, filepath.Join(tr.home, "tokens.json"), filepath.Join(tr.root, "to-tokens"))
	symlink(t, filepath.Join(tr.root, "dir", "ok.txt"), filepath.Join(tr.root, "to-ok"))

	for _, p := range []string{
		filepath.Join(tr.root, "dir", "ok.txt"),
		"dir/ok.txt", // relative: in the first root
		filepath.Join(tr.root, "to-ok"),
		filepath.Join(tr.root, "dir", "..", "dir", "ok.txt"),
	} {
		f, err := tr.h.Open(p)
		if err != nil {
			t.Fatalf("open %s: %v", p, err)
		}
		f.Close()
	}
	for _, tc := range []struct{ path, mention string }{
		{filepath.Join(tr.outside, "secret"), tr.root},
		{filepath.Join(tr.root, "..", "outside", "secret"), "outside the folders"},
		{filepath.Join(tr.root, "to-secret"), "outside the folders"},
		{filepath.Join(tr.root, "to-outside", "secret"), "outside the folders"},
		{filepath.Join(tr.home, "tokens.json"), "$CUA_HOME"},
		{filepath.Join(tr.root, "to-tokens"), "$CUA_HOME"},
		{"../outside/secret", "outside the folders"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			f, err := tr.h.Open(tc.path)
			if err == nil {
				f.Close()
			}
			wantRefused(t, err, tc.mention)
			_, err = tr.h.Stat(tc.path)
			wantRefused(t, err, tc.mention)
		})
	}
}

func TestConfinedWritesOnlyUnderItsRoots(t *testing.T) {
	tr := newTree(t)
	symlink(t, tr.outside, filepath.Join(tr.root, "to-outside"))
	d, err := tr.h.OpenDir(filepath.Join(tr.root, "new", "deeper"), true)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	for _, tc := range []struct{ path, mention string }{
		{filepath.Join(tr.root, "to-outside", "made"), "outside the folders"},
		{filepath.Join(tr.home, "sub"), "$CUA_HOME"},
		{filepath.Join(tr.outside, "made"), "outside the folders"},
	} {
		d, err := tr.h.OpenDir(tc.path, true)
		if err == nil {
			d.Close()
		}
		wantRefused(t, err, tc.mention)
	}
	if _, err := os.Stat(filepath.Join(tr.outside, "made")); err == nil {
		t.Fatal("a refused OpenDir made a folder outside the root")
	}
}

// A root inside the bridge's home would hand it all out; it is refused at
// start-up, as is no root at all.
func TestConfinedRefusesBadRoots(t *testing.T) {
	tr := newTree(t)
	if _, err := hostfs.Confined([]string{filepath.Join(tr.home)}, hostfs.Deny{Path: tr.home, What: "$CUA_HOME"}); err == nil {
		t.Fatal("a root inside $CUA_HOME was accepted")
	}
	if _, err := hostfs.Confined(nil); err == nil {
		t.Fatal("no roots was accepted")
	}
	if _, err := hostfs.Confined([]string{filepath.Join(tr.root, "dir", "ok.txt")}); err == nil {
		t.Fatal("a file as root was accepted")
	}
}

// The walk from a root follows no symlink, so a folder swapped for a link
// after the path was checked (the race a check alone leaves open) fails
// the open instead of leading outside.
func TestWalkFollowsNoSymlink(t *testing.T) {
	tr := newTree(t)
	root, err := tr.h.OpenDir(tr.root, false)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := os.Rename(filepath.Join(tr.root, "dir"), filepath.Join(tr.root, "moved")); err != nil {
		t.Fatal(err)
	}
	symlink(t, tr.outside, filepath.Join(tr.root, "dir"))
	if sub, err := root.OpenDir("dir"); err == nil {
		sub.Close()
		t.Fatal("OpenDir followed a symlink")
	}
	if f, err := root.Open("dir"); err == nil {
		f.Close()
		t.Fatal("Open followed a symlink")
	}
	if _, err := root.MkdirAll("dir/x"); err == nil {
		t.Fatal("MkdirAll followed a symlink")
	}
	// A dangling link is not written through either.
	symlink(t, filepath.Join(tr.outside, "planted"), filepath.Join(tr.root, "dangling"))
	if f, err := root.Create("dangling", 0o644); err == nil {
		f.Close()
		t.Fatal("Create wrote through a dangling symlink")
	}
	if _, err := os.Lstat(filepath.Join(tr.outside, "planted")); err == nil {
		t.Fatal("a file appeared where the link pointed")
	}
}

// A denied file is refused by what it is, not only by its name: a hard link
// to it inside the root is refused too.
func TestDeniedByIdentity(t *testing.T) {
	base := t.TempDir()
	token := filepath.Join(base, "bridge.token")
	write(t, token, "secret")
	if err := os.Link(token, filepath.Join(base, "innocent.txt")); err != nil {
		t.Fatal(err)
	}
	h, err := hostfs.Confined([]string{base}, hostfs.Deny{Path: token, What: "the bridge's token file"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := h.Open(filepath.Join(base, "innocent.txt"))
	if err == nil {
		f.Close()
	}
	wantRefused(t, err, "token file")
}

// The final rename of a folder download must not replace an empty folder
// that appeared at the name meanwhile; a plain rename does (the control).
func TestRenameNoReplace(t *testing.T) {
	base := t.TempDir()
	for _, p := range []string{"staged", "staged2", "taken"} {
		if err := os.Mkdir(filepath.Join(base, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(base, "staged", "f"), "data")
	write(t, filepath.Join(base, "staged2", "f"), "data")
	d, err := hostfs.Unconfined().OpenDir(base, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.RenameNoReplace("staged", "taken")
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("rename over an empty folder: %v, want exists", err)
	}
	if _, err := os.Stat(filepath.Join(base, "staged", "f")); err != nil {
		t.Fatal("the refused rename moved the source")
	}
	if err := d.RenameNoReplace("staged", "free"); err != nil {
		t.Fatal(err)
	}
	// The control: rename(2) replaces the empty folder without a word.
	if err := d.Rename("staged2", "taken"); err != nil {
		t.Fatalf("control: %v", err)
	}
}

// RemoveAll removes links, not what they point at, and empties folders
// made read-only.
func TestRemoveAllFollowsNoSymlink(t *testing.T) {
	tr := newTree(t)
	staged := filepath.Join(tr.root, "staged")
	if err := os.MkdirAll(filepath.Join(staged, "ro"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(staged, "ro", "f"), "x")
	symlink(t, tr.outside, filepath.Join(staged, "out"))
	if err := os.Chmod(filepath.Join(staged, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	d, err := tr.h.OpenDir(tr.root, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.RemoveAll("staged"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(staged); err == nil {
		t.Fatal("staged is still there")
	}
	if _, err := os.Stat(filepath.Join(tr.outside, "secret")); err != nil {
		t.Fatal("RemoveAll followed the link and removed what it pointed at")
	}
}

// Outside the roots, Open and Stat refuse a path with the same kind and
// message whatever is there: a file, nothing, a path under a file, a
// symlink loop, a folder out of reach, or a dangling link in a root that
// points out. Only the path named differs.
func TestConfinedSaysNothingOfWhatIsOutside(t *testing.T) {
	tr := newTree(t)
	symlink(t, filepath.Join(tr.outside, "loop"), filepath.Join(tr.outside, "loop"))
	locked := filepath.Join(tr.outside, "locked")
	if err := os.Mkdir(locked, 0o000); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	symlink(t, filepath.Join(tr.outside, "gone"), filepath.Join(tr.root, "dangling-out"))
	symlink(t, filepath.Join(tr.outside, "secret"), filepath.Join(tr.root, "to-secret"))
	paths := []string{
		filepath.Join(tr.outside, "secret"),
		filepath.Join(tr.outside, "gone"),
		filepath.Join(tr.outside, "secret", "x"),
		filepath.Join(tr.outside, "loop"),
		filepath.Join(tr.outside, "loop", "x"),
		filepath.Join(locked, "x"),
		filepath.Join(tr.root, "dangling-out"),
		filepath.Join(tr.root, "to-secret"),
	}
	named := regexp.MustCompile(`path .* is outside`)
	for op, f := range map[string]func(string) error{
		"open": func(p string) error { _, err := tr.h.Open(p); return err },
		"stat": func(p string) error { _, err := tr.h.Stat(p); return err },
	} {
		var first string
		for _, p := range paths {
			err := f(p)
			wantRefused(t, err, "outside the folders")
			msg := named.ReplaceAllString(err.Error(), "P")
			if first == "" {
				first = msg
			} else if msg != first {
				t.Fatalf("%s %s: %q, unlike %q", op, p, msg, first)
			}
		}
	}
}
