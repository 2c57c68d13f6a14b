package cli_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// cpSize spans several upload chunks of the daemon and a sizeable download.
const cpSize = 20<<20 + 12345

func randomFile(t *testing.T, dir, name string, n int) ([]byte, string) {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o640); err != nil {
		t.Fatal(err)
	}
	return b, p
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

func TestCpRoundTrip(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	local, remote := t.TempDir(), t.TempDir() // the Space is this machine
	ctx := t.Context()
	data, src := randomFile(t, local, "big.bin", cpSize)

	// Upload into a directory: the file keeps its name and mode.
	r := run(ctx, s.home, "", "cp", src, "dev:"+remote)
	if r.code != 0 || !strings.Contains(r.stdout, "sha256 "+sum(data)+" verified in Space") {
		t.Fatalf("upload: %+v", r)
	}
	up := filepath.Join(remote, "big.bin")
	got, err := os.ReadFile(up)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("uploaded file differs (err %v)", err)
	}
	if fi, _ := os.Stat(up); fi.Mode().Perm() != 0o640 {
		t.Fatalf("uploaded mode %v, want 0640", fi.Mode().Perm())
	}
	// No progress bar when stderr is not a terminal.
	if r.stderr != "" {
		t.Fatalf("stderr not a terminal, yet: %q", r.stderr)
	}

	// Download to a new name.
	back := filepath.Join(local, "back.bin")
	r = run(ctx, s.home, "", "cp", "dev:"+up, back)
	if r.code != 0 || !strings.Contains(r.stdout, "sha256 "+sum(data)+" verified") {
		t.Fatalf("download: %+v", r)
	}
	if got, _ := os.ReadFile(back); !bytes.Equal(got, data) {
		t.Fatal("downloaded file differs")
	}
	if left, _ := filepath.Glob(filepath.Join(local, ".*cua-partial")); len(left) != 0 {
		t.Fatalf("partial files left behind: %v", left)
	}

	// Neither direction replaces a file without --force.
	if err := os.WriteFile(back, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"cp", "dev:" + up, back}, {"cp", src, "dev:" + up}, {"cp", "dev:" + up, local + "/"}} {
		r = run(ctx, s.home, "", args...)
		if r.code == 0 || !strings.Contains(r.stderr, "exists; pass --force") {
			t.Fatalf("%v: want refusal, got %+v", args, r)
		}
	}
	if got, _ := os.ReadFile(back); string(got) != "mine" {
		t.Fatal("refused download still changed the local file")
	}
	r = run(ctx, s.home, "", "cp", "--force", "dev:"+up, back)
	if got, _ := os.ReadFile(back); r.code != 0 || !bytes.Equal(got, data) {
		t.Fatalf("download --force: %+v", r)
	}
	small := []byte("replaced\n")
	if err := os.WriteFile(src, small, 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(ctx, s.home, "", "cp", src, "dev:"+up, "-f")
	if got, _ := os.ReadFile(up); r.code != 0 || !bytes.Equal(got, small) {
		t.Fatalf("upload -f: %+v", r)
	}
}

func TestCpEmptyFile(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	local, remote := t.TempDir(), t.TempDir()
	_, src := randomFile(t, local, "empty", 0)
	if r := run(t.Context(), s.home, "", "cp", src, "dev:"+remote+"/e"); r.code != 0 {
		t.Fatalf("upload: %+v", r)
	}
	if r := run(t.Context(), s.home, "", "cp", "dev:"+remote+"/e", local+"/e2"); r.code != 0 {
		t.Fatalf("download: %+v", r)
	}
	if fi, err := os.Stat(local + "/e2"); err != nil || fi.Size() != 0 {
		t.Fatalf("empty file: %v %v", fi, err)
	}
}

// A download resumes from a partial file an earlier run left. A partial
// whose bytes differ from the Space's is caught by the sha256 check: nothing
// lands, the partial goes, and the next run is clean.
func TestCpDownloadResumeIsVerified(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	local, remote := t.TempDir(), t.TempDir()
	data, src := randomFile(t, remote, "f.bin", 1<<20)
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(local, "f.bin")
	part := filepath.Join(local, fmt.Sprintf(".f.bin.%d-%d.cua-partial", fi.Size(), fi.ModTime().UnixNano()))

	// A good half: resumed, and the result is whole.
	if err := os.WriteFile(part, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t.Context(), s.home, "", "cp", "dev:"+src, dest)
	if got, _ := os.ReadFile(dest); r.code != 0 || !bytes.Equal(got, data) {
		t.Fatalf("resumed download: %+v", r)
	}
	os.Remove(dest)

	// A corrupt half: refused by the sha256 check.
	bad := bytes.Repeat([]byte{0xAA}, len(data)/2)
	if err := os.WriteFile(part, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t.Context(), s.home, "", "cp", "dev:"+src, dest)
	if r.code == 0 || !strings.Contains(r.stderr, "transfer_failed") || !strings.Contains(r.stderr, "sha256 mismatch") {
		t.Fatalf("corrupt resume: %+v", r)
	}
	if _, err := os.Stat(dest); err == nil {
		t.Fatal("a download that failed its check left the destination")
	}
	if _, err := os.Stat(part); err == nil {
		t.Fatal("the corrupt partial was kept")
	}
	r = run(t.Context(), s.home, "", "cp", "dev:"+src, dest)
	if got, _ := os.ReadFile(dest); r.code != 0 || !bytes.Equal(got, data) {
		t.Fatalf("download after the failed one: %+v", r)
	}
}

func TestCpArguments(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"both local", []string{"a", "b"}, "neither side is in a Space"},
		{"both remote", []string{"dev:/a", "dev:/b"}, "between two Spaces"},
		{"relative remote", []string{"a", "dev:a"}, "must be absolute"},
		{"missing local", []string{filepath.Join(dir, "nope"), "dev:/tmp/x"}, "no such file"},
		{"missing remote", []string{"dev:" + filepath.Join(dir, "nope"), dir + "/x"}, "not_found"},
		{"remote FIFO", []string{"dev:" + fifo, dir + "/x"}, "not a file or folder"},
		{"local FIFO", []string{fifo, "dev:" + dir + "/y"}, "not a regular file or folder"},
		{"unknown Space", []string{"nope:/a", dir + "/x"}, "no space named"},
		{"one argument", []string{"a"}, "usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t.Context(), s.home, "", append([]string{"cp"}, tt.args...)...)
			if r.code == 0 || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("want failure mentioning %q, got %+v", tt.want, r)
			}
		})
	}
}

// A whole download is verified by the sha256 the daemon sends as a trailer:
// no tool in the Space needed. With no sha256sum on the Space's PATH, a fresh
// download still says "verified"; only a resumed one falls back to size.
func TestCpDownloadVerifiedWithoutHashTool(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // the daemon's children find no sha256sum
	s := startSpace(t, spacesdtest.Options{})
	local, remote := t.TempDir(), t.TempDir()
	data, src := randomFile(t, remote, "f.bin", 3<<20)
	r := run(t.Context(), s.home, "", "cp", "dev:"+src, local+"/")
	if r.code != 0 || !strings.Contains(r.stdout, "sha256 "+sum(data)+" verified") || strings.Contains(r.stdout, "no sha256 tool") {
		t.Fatalf("fresh download: %+v", r)
	}
	// The control: a resumed download (ranges, no trailer) finds no tool.
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(local, fmt.Sprintf(".g.bin.%d-%d.cua-partial", fi.Size(), fi.ModTime().UnixNano()))
	if err := os.WriteFile(part, data[:1<<20], 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t.Context(), s.home, "", "cp", "dev:"+src, local+"/g.bin")
	if r.code != 0 || !strings.Contains(r.stdout, "no sha256 tool") {
		t.Fatalf("resumed download: %+v", r)
	}
	if got, _ := os.ReadFile(local + "/g.bin"); !bytes.Equal(got, data) {
		t.Fatal("resumed download differs")
	}
}

// cp copies folders both ways: every file, its mode, empty folders, and a
// symlink in the Space comes back as the same symlink.
func TestCpFolders(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	local, remote := t.TempDir(), t.TempDir()
	tree := filepath.Join(local, "tree")
	for _, d := range []string{"a/b", "empty"} {
		if err := os.MkdirAll(filepath.Join(tree, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(tree, "a", "one.txt"), []byte("1"), 0o644)
	os.WriteFile(filepath.Join(tree, "a", "b", "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	r := run(t.Context(), s.home, "", "cp", tree, "dev:"+remote)
	if r.code != 0 || !strings.Contains(r.stdout, "2 files") || !strings.Contains(r.stdout, "verified in Space") {
		t.Fatalf("folder upload: %+v", r)
	}
	up := filepath.Join(remote, "tree")
	if b, _ := os.ReadFile(filepath.Join(up, "a", "b", "run.sh")); string(b) != "#!/bin/sh\n" {
		t.Fatalf("uploaded run.sh = %q", b)
	}
	if fi, err := os.Stat(filepath.Join(up, "empty")); err != nil || !fi.IsDir() {
		t.Fatalf("empty folder not uploaded: %v", err)
	}
	// Without --force an existing folder is refused, files untouched.
	if r := run(t.Context(), s.home, "", "cp", tree, "dev:"+remote); r.code == 0 || !strings.Contains(r.stderr, "exists; pass --force") {
		t.Fatalf("second upload: %+v", r)
	}
	if err := os.Symlink("a/one.txt", filepath.Join(up, "link")); err != nil {
		t.Fatal(err)
	}

	back := filepath.Join(local, "back")
	r = run(t.Context(), s.home, "", "cp", "dev:"+up, back)
	if r.code != 0 || !strings.Contains(r.stdout, "2 files") || !strings.Contains(r.stdout, "1 symlinks") || !strings.Contains(r.stdout, " verified") {
		t.Fatalf("folder download: %+v", r)
	}
	if fi, err := os.Stat(filepath.Join(back, "a", "b", "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("run.sh: %v %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(back, "link")); err != nil || target != "a/one.txt" {
		t.Fatalf("link: %q %v", target, err)
	}
	if fi, err := os.Stat(filepath.Join(back, "empty")); err != nil || !fi.IsDir() {
		t.Fatalf("empty folder not downloaded: %v", err)
	}
	// A folder is never replaced (here local/tree, the source of the
	// upload), --force or not, and nothing is left behind.
	for _, args := range [][]string{{"cp", "dev:" + up, local}, {"cp", "--force", "dev:" + up, local + "/"}} {
		if r := run(t.Context(), s.home, "", args...); r.code == 0 || !strings.Contains(r.stderr, "never replaces a folder") {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(local, ".*cua-part*")); len(left) != 0 {
		t.Fatalf("temporary folders left behind: %v", left)
	}
}

// cp of a folder from a Space makes only the symlinks that stay inside it;
// an absolute one (it would name /etc of this machine) and one that climbs
// out are skipped, counted in the summary and named on stderr.
func TestCpFolderDownloadSkipsLinksLeadingOut(t *testing.T) {
	s := startSpace(t, spacesdtest.Options{})
	tree := filepath.Join(t.TempDir(), "tree")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tree, "a.txt"), []byte("a"), 0o644)
	for name, target := range map[string]string{"in": "a.txt", "etc": "/etc", "up": "../x"} {
		if err := os.Symlink(target, filepath.Join(tree, name)); err != nil {
			t.Fatal(err)
		}
	}
	back := filepath.Join(t.TempDir(), "back")
	r := run(t.Context(), s.home, "", "cp", "dev:"+tree, back)
	if r.code != 0 || !strings.Contains(r.stdout, "1 symlinks, 2 skipped (absolute symlinks, symlinks leading out of the folder)") ||
		!strings.Contains(r.stderr, "skipped etc -> /etc: an absolute symlink") || !strings.Contains(r.stderr, "skipped up -> ../x: a symlink leading out of the folder") {
		t.Fatalf("folder download: %+v", r)
	}
	if target, err := os.Readlink(filepath.Join(back, "in")); err != nil || target != "a.txt" {
		t.Fatalf("in: %q %v", target, err)
	}
	for _, name := range []string{"etc", "up"} {
		if _, err := os.Lstat(filepath.Join(back, name)); err == nil {
			t.Errorf("%s was made", name)
		}
	}
}
