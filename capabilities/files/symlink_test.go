package files_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
	"github.com/trycua/cua-spacesd/internal/testenv"
)

// otherUser is a real second user, for links planted by someone who is not
// the daemon. The daemon under test runs as root (as in most Spaces), so
// these tests need root; CI runs them as root.
type otherUser struct{ uid, gid int }

func needOtherUser(t *testing.T) otherUser {
	t.Helper()
	if os.Geteuid() != 0 {
		msg := "the symlink rules are about a daemon running as root; run as root"
		testenv.Missing(t, "%s", msg)
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return otherUser{uid, gid}
}

// run runs a command as the other user.
func (o otherUser) run(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.gid)}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v as uid %d: %v: %s", name, args, o.uid, err, out)
	}
}

// symlinkAs plants a symlink made by the other user.
func (o otherUser) symlinkAs(t *testing.T, target, link string) {
	t.Helper()
	o.run(t, "ln", "-s", target, link)
}

// layout is a root-owned system directory with a setuid-root program, and
// a home directory of the other user holding a setuid program of theirs.
type layout struct {
	sys, home       string
	rootSUID, owned string
}

func newLayout(t *testing.T, o otherUser) layout {
	t.Helper()
	base := t.TempDir()
	// The other user must be able to reach the home directory.
	if err := os.Chmod(filepath.Dir(base), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	l := layout{sys: filepath.Join(base, "sys"), home: filepath.Join(base, "home")}
	for _, d := range []string{l.sys, l.home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(l.home, o.uid, o.gid); err != nil {
		t.Fatal(err)
	}
	l.rootSUID = filepath.Join(l.sys, "suid")
	writeFile(t, l.rootSUID, "root's program")
	if err := os.Chmod(l.rootSUID, 0o755|fs.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	l.owned = filepath.Join(l.home, "own")
	o.run(t, "sh", "-c", "printf 'their program' > "+l.owned+" && chmod 4755 "+l.owned)
	return l
}

// fileState is what a test checks of a path: its type, mode bits, owner
// and content.
func fileState(t *testing.T, p string) string {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		return "missing"
	}
	st := fi.Sys().(*syscall.Stat_t)
	s := fi.Mode().String() + " uid=" + strconv.Itoa(int(st.Uid))
	if fi.Mode().IsRegular() {
		b, _ := os.ReadFile(p)
		s += " " + strconv.Quote(string(b))
	}
	return s
}

// A write never turns the caller's bytes into a setuid program, and never
// lands through another user's symlink in a file that user does not own.
// Seen before: nobody's link to a root 4755 file, written by the root
// daemon, left "-rwsr-xr-x root" holding the caller's bytes.
func TestWriteThroughSymlinks(t *testing.T) {
	o := needOtherUser(t)
	for _, tc := range []struct {
		name string
		// plant prepares the layout and returns the path to write.
		plant func(t *testing.T, l layout) string
		mode  *fs.FileMode
		kind  api.Kind
		// want maps paths (relative to the layout's base) to their state after the write.
		want func(l layout) map[string]string
	}{
		{
			name: "another user's link to a root setuid file is refused",
			plant: func(t *testing.T, l layout) string {
				o.symlinkAs(t, l.rootSUID, filepath.Join(l.home, "link"))
				return filepath.Join(l.home, "link")
			},
			kind: api.KindPermissionDenied,
			want: func(l layout) map[string]string {
				return map[string]string{
					l.rootSUID:                    `urwxr-xr-x uid=0 "root's program"`,
					filepath.Join(l.home, "link"): "Lrwxrwxrwx uid=" + strconv.Itoa(o.uid),
				}
			},
		},
		{
			name: "a user's link to their own file is followed; setuid is not kept",
			plant: func(t *testing.T, l layout) string {
				o.symlinkAs(t, "own", filepath.Join(l.home, "link"))
				return filepath.Join(l.home, "link")
			},
			want: func(l layout) map[string]string {
				return map[string]string{
					l.owned:                       "-rwxr-xr-x uid=" + strconv.Itoa(o.uid) + ` "new bytes"`,
					filepath.Join(l.home, "link"): "Lrwxrwxrwx uid=" + strconv.Itoa(o.uid),
				}
			},
		},
		{
			name:  "a setuid file written directly loses setuid, keeps its owner",
			plant: func(t *testing.T, l layout) string { return l.owned },
			want: func(l layout) map[string]string {
				return map[string]string{l.owned: "-rwxr-xr-x uid=" + strconv.Itoa(o.uid) + ` "new bytes"`}
			},
		},
		{
			name:  "setuid asked for explicitly is applied",
			plant: func(t *testing.T, l layout) string { return l.rootSUID },
			mode:  ptr(0o755 | fs.ModeSetuid),
			want: func(l layout) map[string]string {
				return map[string]string{l.rootSUID: `urwxr-xr-x uid=0 "new bytes"`}
			},
		},
		{
			name: "root's own link is followed wherever it points; the target is replaced in its directory",
			plant: func(t *testing.T, l layout) string {
				if err := os.Symlink(l.rootSUID, filepath.Join(l.home, "rootlink")); err != nil {
					t.Fatal(err)
				}
				return filepath.Join(l.home, "rootlink")
			},
			want: func(l layout) map[string]string {
				return map[string]string{
					l.rootSUID:                        `-rwxr-xr-x uid=0 "new bytes"`,
					filepath.Join(l.home, "rootlink"): "Lrwxrwxrwx uid=0",
				}
			},
		},
		{
			name: "another user's link in a parent directory is refused",
			plant: func(t *testing.T, l layout) string {
				o.symlinkAs(t, l.sys, filepath.Join(l.home, "d"))
				return filepath.Join(l.home, "d", "new")
			},
			kind: api.KindPermissionDenied,
			want: func(l layout) map[string]string {
				return map[string]string{filepath.Join(l.sys, "new"): "missing"}
			},
		},
		{
			name: "a user's dangling link into their own directory makes the file there",
			plant: func(t *testing.T, l layout) string {
				o.symlinkAs(t, "made", filepath.Join(l.home, "dangling"))
				return filepath.Join(l.home, "dangling")
			},
			want: func(l layout) map[string]string {
				return map[string]string{filepath.Join(l.home, "made"): `-rw-r--r-- uid=0 "new bytes"`}
			},
		},
		{
			name: "a user's dangling link into a root directory is refused",
			plant: func(t *testing.T, l layout) string {
				o.symlinkAs(t, filepath.Join(l.sys, "made"), filepath.Join(l.home, "dangling"))
				return filepath.Join(l.home, "dangling")
			},
			kind: api.KindPermissionDenied,
			want: func(l layout) map[string]string {
				return map[string]string{filepath.Join(l.sys, "made"): "missing"}
			},
		},
		{
			name: "a chain through root's link does not launder another user's link",
			plant: func(t *testing.T, l layout) string {
				if err := os.Symlink(l.rootSUID, filepath.Join(l.home, "rootlink")); err != nil {
					t.Fatal(err)
				}
				o.symlinkAs(t, "rootlink", filepath.Join(l.home, "link"))
				return filepath.Join(l.home, "link")
			},
			kind: api.KindPermissionDenied,
			want: func(l layout) map[string]string {
				return map[string]string{l.rootSUID: `urwxr-xr-x uid=0 "root's program"`}
			},
		},
		{
			name: "a loop of links ends in an error",
			plant: func(t *testing.T, l layout) string {
				o.symlinkAs(t, "b", filepath.Join(l.home, "a"))
				o.symlinkAs(t, "a", filepath.Join(l.home, "b"))
				return filepath.Join(l.home, "a")
			},
			kind: api.KindInvalidArgument,
			want: func(l layout) map[string]string {
				return map[string]string{filepath.Join(l.home, "a"): "Lrwxrwxrwx uid=" + strconv.Itoa(o.uid)}
			},
		},
		{
			name: "a FIFO is not swapped for a file",
			plant: func(t *testing.T, l layout) string {
				p := filepath.Join(l.home, "fifo")
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
				return p
			},
			kind: api.KindInvalidArgument,
			want: func(l layout) map[string]string {
				return map[string]string{filepath.Join(l.home, "fifo"): "prw-r--r-- uid=0"}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLayout(t, o)
			p := tc.plant(t, l)
			before := entries(t, l.home)
			_, err := files.WriteAtomic(p, strings.NewReader("new bytes"), files.WriteOptions{Mode: tc.mode})
			if api.KindOf(err) != tc.kind {
				t.Fatalf("write %s: %v; want kind %q", p, err, tc.kind)
			}
			for path, want := range tc.want(l) {
				if got := fileState(t, path); got != want {
					t.Errorf("%s is %s; want %s", path, got, want)
				}
			}
			if tc.kind != "" {
				if got := entries(t, l.home); strings.Join(got, " ") != strings.Join(before, " ") {
					t.Errorf("a refused write changed the directory: %v -> %v", before, got)
				}
			}
		})
	}
}

func ptr(m fs.FileMode) *fs.FileMode { return &m }

// The refusal names the link, its owner and where it points, so that the
// caller can name the target itself if that is what they meant.
func TestWriteThroughAnotherUsersLinkSaysWhy(t *testing.T) {
	o := needOtherUser(t)
	l := newLayout(t, o)
	link := filepath.Join(l.home, "link")
	o.symlinkAs(t, l.rootSUID, link)
	_, err := files.WriteAtomic(link, strings.NewReader("x"), files.WriteOptions{})
	want := link + " is a symlink of uid " + strconv.Itoa(o.uid) + " to " + l.rootSUID + ", which is owned by uid 0"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v; want it to say %q", err, want)
	}
	// Naming the target itself is the caller's explicit choice: allowed.
	if _, err := files.WriteAtomic(l.rootSUID, strings.NewReader("x"), files.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Uploads follow the rules of a write: refused through another user's
// link, and a committed file never inherits setuid.
func TestUploadThroughSymlinks(t *testing.T) {
	o := needOtherUser(t)
	l := newLayout(t, o)
	data := []byte("uploaded bytes")
	sum := sha256.Sum256(data)
	req := func(p string) api.UploadRequest {
		return api.UploadRequest{Path: p, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Overwrite: true}
	}
	us := files.NewUploads(files.UploadOptions{})
	defer us.Close()

	o.symlinkAs(t, l.rootSUID, filepath.Join(l.home, "link"))
	o.symlinkAs(t, l.sys, filepath.Join(l.home, "d"))
	for _, p := range []string{filepath.Join(l.home, "link"), filepath.Join(l.home, "d", "new")} {
		if _, err := us.Begin(req(p)); api.KindOf(err) != api.KindPermissionDenied {
			t.Errorf("upload to %s: %v; want permission_denied", p, err)
		}
	}
	if got := strings.Join(entries(t, l.sys), " "); got != "suid" {
		t.Errorf("the system directory now holds %q", got)
	}

	for _, p := range []string{l.rootSUID, l.owned} {
		st, err := us.Begin(req(p))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := us.Put(t.Context(), st.ID, 0, int64(len(data)), bytes.NewReader(data), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := us.Commit(t.Context(), st.ID); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode() != 0o755 {
			t.Errorf("%s after an upload: %v %v; want -rwxr-xr-x, setuid dropped", p, fi.Mode(), err)
		}
	}
	if got := fileState(t, l.owned); got != "-rwxr-xr-x uid="+strconv.Itoa(o.uid)+` "uploaded bytes"` {
		t.Errorf("their file is %s; want it still theirs", got)
	}
}

// mkdir, move and remove do not follow another user's link in a parent
// directory; the link itself may still be moved or removed.
func TestMkdirMoveRemoveThroughSymlinks(t *testing.T) {
	o := needOtherUser(t)
	l := newLayout(t, o)
	d := filepath.Join(l.home, "d")
	o.symlinkAs(t, l.sys, d)
	sysBefore := strings.Join(entries(t, l.sys), " ")
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"mkdir", func() error { return files.Mkdir(api.MkdirRequest{Path: filepath.Join(d, "x")}) }},
		{"mkdir -p", func() error { return files.Mkdir(api.MkdirRequest{Path: filepath.Join(d, "x", "y"), Parents: true}) }},
		{"mkdir -p of the link", func() error { return files.Mkdir(api.MkdirRequest{Path: d, Parents: true, Mode: "0777"}) }},
		{"move out", func() error {
			return files.Move(api.MoveRequest{From: filepath.Join(d, "suid"), To: filepath.Join(l.home, "stolen")})
		}},
		{"move in", func() error {
			return files.Move(api.MoveRequest{From: l.owned, To: filepath.Join(d, "suid"), Overwrite: true})
		}},
		{"remove", func() error { return files.Remove(api.RemoveRequest{Path: filepath.Join(d, "suid")}) }},
	} {
		if err := tc.do(); api.KindOf(err) != api.KindPermissionDenied {
			t.Errorf("%s through %s: %v; want permission_denied", tc.name, d, err)
		}
	}
	if got := strings.Join(entries(t, l.sys), " "); got != sysBefore {
		t.Errorf("the system directory changed: %q -> %q", sysBefore, got)
	}
	if fi, err := os.Stat(l.sys); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the system directory is %v %v; want 0755 kept", fi.Mode(), err)
	}
	// The link itself is theirs to have moved and removed.
	moved := filepath.Join(l.home, "d2")
	if err := files.Move(api.MoveRequest{From: d, To: moved}); err != nil {
		t.Fatal(err)
	}
	if err := files.Remove(api.RemoveRequest{Path: moved, Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(entries(t, l.sys), " "); got != sysBefore {
		t.Errorf("removing the link touched its target: %q -> %q", sysBefore, got)
	}
}

// A recursive removal removes links inside the tree, never what they point
// at.
func TestRemoveRecursiveDoesNotFollowLinks(t *testing.T) {
	root := t.TempDir()
	keep := filepath.Join(root, "keep")
	writeFile(t, filepath.Join(keep, "precious"), "p")
	tree := filepath.Join(root, "tree")
	writeFile(t, filepath.Join(tree, "a", "b", "c"), "c")
	if err := os.Symlink(keep, filepath.Join(tree, "a", "link")); err != nil {
		t.Fatal(err)
	}
	if err := files.Remove(api.RemoveRequest{Path: tree, Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(tree); !os.IsNotExist(err) {
		t.Errorf("tree still there: %v", err)
	}
	if got := fileState(t, filepath.Join(keep, "precious")); got != `-rw-r--r-- uid=`+strconv.Itoa(os.Geteuid())+` "p"` {
		t.Errorf("the link's target is %s", got)
	}
}
