package filesvc_test

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// The hole as reported: as another user, a symlink in that user's
// directory to a root 4755 program; a root daemon's PUT through it left
// "-rwsr-xr-x root" holding the caller's bytes. Now the PUT is refused
// (403 permission_denied) and nothing changes.
func TestPutThroughAnotherUsersSymlinkToASetuidProgram(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Missing(t, "needs root, as the daemon it tests")
	}
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	prog := filepath.Join(base, "prog")
	if err := os.WriteFile(prog, []byte("root's program"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(prog, 0o755|fs.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	if err := os.Mkdir(home, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o777); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(home, "link")
	ln := exec.Command("ln", "-s", prog, link)
	ln.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}} // nobody
	if out, err := ln.CombinedOutput(); err != nil {
		t.Fatalf("ln -s as nobody: %v: %s", err, out)
	}

	d := spacesdtest.Start(t, spacesdtest.Options{})
	_, err := d.Client.Write(t.Context(), link, strings.NewReader("caller's bytes"), -1, "")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Kind != api.KindPermissionDenied || ae.Status != http.StatusForbidden {
		t.Fatalf("PUT through the link: %v; want 403 permission_denied", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link is now %v %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(prog); string(b) != "root's program" {
		t.Errorf("the program now holds %q", b)
	}
	if fi, _ := os.Stat(prog); fi.Mode() != 0o755|fs.ModeSetuid {
		t.Errorf("the program is now %v", fi.Mode())
	}
	if got := dirNames(t, home); got != "link" {
		t.Errorf("home holds %q; want only the link", got)
	}
}
