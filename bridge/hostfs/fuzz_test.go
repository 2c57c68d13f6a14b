//go:build linux

package hostfs_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/bridge/hostfs"
)

// FuzzConfinedPaths: whatever path an agent passes, what a confined FS
// opens (read or write side) is under its root and not in the denied home;
// the kernel's own name for the opened descriptor is the judge.
func FuzzConfinedPaths(f *testing.F) {
	for _, s := range []string{
		"dir/ok.txt", "../outside/secret", "/etc/passwd", "to-outside/secret", "to-outside/../dir",
		"cua-home/tokens.json", "dir/../cua-home", "to-home/tokens.json", "./dir//ok.txt", "dir/../../root/dir",
		"loop/x", "", ".", "/", "dir/\x00", "to-root-parent/outside",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	base := f.TempDir()
	root := filepath.Join(base, "root")
	home := filepath.Join(root, "cua-home")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "dir"), home, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for p, target := range map[string]string{
		"to-outside": outside, "to-home": home, "to-root-parent": base, "loop": "loop",
	} {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			f.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "dir", "ok.txt"), []byte("ok"), 0o644)
	os.WriteFile(filepath.Join(home, "tokens.json"), []byte("t"), 0o600)
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600)
	h, err := hostfs.Confined([]string{root}, hostfs.Deny{Path: home, What: "$CUA_HOME"})
	if err != nil {
		f.Fatal(err)
	}
	allowed := func(t *testing.T, fd uintptr, p string) {
		got, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fd)))
		if err != nil {
			t.Fatal(err)
		}
		if (got != root && !strings.HasPrefix(got, root+"/")) || got == home || strings.HasPrefix(got, home+"/") {
			t.Fatalf("path %q opened %s, outside %s or inside the denied home", p, got, root)
		}
	}
	f.Fuzz(func(t *testing.T, p string, write bool) {
		if write {
			d, err := h.OpenDir(p, true)
			if err == nil {
				defer d.Close()
				fl, err := d.Create("probe", 0o600)
				if err == nil {
					allowed(t, fl.Fd(), p)
					fl.Close()
					d.Remove("probe")
				}
			}
			return
		}
		fl, err := h.Open(p)
		if err == nil {
			allowed(t, fl.Fd(), p)
			fl.Close()
		}
	})
}
