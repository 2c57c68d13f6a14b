package files_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
)

// hangBound is how long a call that must not block at all may take before
// a test calls it stuck: far beyond any scheduling delay, so it measures
// "never returns", not speed.
const hangBound = 10 * time.Second

// partialName announces an upload once to learn the name of its partial
// file, then aborts it: the name is predictable (derived from path, size
// and sha256), which is what makes a planted entry possible.
func partialName(t *testing.T, us *files.Uploads, req api.UploadRequest) string {
	t.Helper()
	dir := filepath.Dir(req.Path)
	st, err := us.Begin(req)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	for _, n := range entries(t, dir) {
		if strings.Contains(n, ".cua-upload-") {
			name = filepath.Join(dir, n)
		}
	}
	if err := us.Abort(t.Context(), st.ID); err != nil {
		t.Fatal(err)
	}
	if name == "" {
		t.Fatal("no partial file seen")
	}
	return name
}

// An entry planted at the partial file's name (a symlink, or a hard link
// to someone else's file) must never be written through: the daemon often
// runs as root, and the upload's bytes would land in the victim file.
func TestUploadNeverWritesThroughAPlantedPartial(t *testing.T) {
	for _, plant := range []struct {
		name string
		do   func(victim, partial string) error
	}{
		{"symlink", os.Symlink},
		{"hardlink", os.Link},
	} {
		t.Run(plant.name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(dir, "victim")
			writeFile(t, victim, "precious")
			data := []byte("bytes the uploader chose")
			sum := sha256.Sum256(data)
			req := api.UploadRequest{Path: filepath.Join(dir, "f"), Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
			us := files.NewUploads(files.UploadOptions{})
			defer us.Close()
			partial := partialName(t, us, req)
			if err := plant.do(victim, partial); err != nil {
				t.Fatal(err)
			}
			st, err := us.Begin(req)
			if err != nil {
				t.Fatalf("begin: %v", err)
			}
			if st.Offset != 0 {
				t.Errorf("began at offset %d of a foreign file; want 0", st.Offset)
			}
			if _, err := us.Put(t.Context(), st.ID, st.Offset, -1, bytes.NewReader(data[st.Offset:]), nil); err != nil {
				t.Fatalf("put: %v", err)
			}
			if _, err := us.Commit(t.Context(), st.ID); err != nil {
				t.Errorf("commit: %v", err)
			}
			if b, _ := os.ReadFile(victim); string(b) != "precious" {
				t.Errorf("victim now %q", b)
			}
			if b, _ := os.ReadFile(req.Path); !bytes.Equal(b, data) {
				t.Errorf("destination holds %q", b)
			}
			if fi, err := os.Lstat(req.Path); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("destination is %v, %v; want a regular file", fi.Mode(), err)
			}
		})
	}
}

// A read of a FIFO (or any path that is not a regular file) is refused at
// once: opening a FIFO for reading waits for a writer, and nothing would
// ever end that wait, holding a goroutine and the request forever.
func TestOpenRefusesAFIFOWithoutWaiting(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	type result struct {
		f   *files.Content
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := files.Open(t.Context(), fifo)
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		if r.f != nil {
			r.f.Close()
		}
		if api.KindOf(r.err) != api.KindInvalidArgument || !strings.Contains(r.err.Error(), "not a regular file") {
			t.Errorf("Open(fifo) = %v; want invalid_argument, not a regular file", r.err)
		}
	case <-time.After(hangBound):
		// Free the stuck open so that the goroutine ends.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		r := <-done
		if r.f != nil {
			r.f.Close()
		}
		t.Fatalf("Open(fifo) still waited for a writer after %v", hangBound)
	}
}

// mkdir with parents accepts an existing directory as mkdir -p does, and
// like mkdir -p -m leaves its mode alone: the mode is for what mkdir makes.
// Otherwise "mkdir -p /home/user mode 0700" would chmod a live directory,
// and through a symlink ("mkdir -p /tmp/link" with link -> /etc) another
// directory altogether.
func TestMkdirParentsKeepsAnExistingDirectorysMode(t *testing.T) {
	root := t.TempDir()
	existing := filepath.Join(root, "existing")
	if err := os.Mkdir(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(existing, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{existing, link} {
		if err := files.Mkdir(api.MkdirRequest{Path: p, Parents: true, Mode: "0700"}); err != nil {
			t.Errorf("mkdir -p %s: %v", p, err)
		}
		if fi, err := os.Stat(existing); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("after mkdir -p %s the existing directory is %v, %v; want 0755 kept", p, fi.Mode(), err)
		}
	}
	// What mkdir -p makes still gets the mode exactly, past the umask.
	made := filepath.Join(root, "new", "deeper")
	if err := files.Mkdir(api.MkdirRequest{Path: made, Parents: true, Mode: "0770"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(made); err != nil || fi.Mode().Perm() != 0o770 {
		t.Errorf("made %v, %v; want 0770", fi.Mode(), err)
	}
	// A file in the way is still refused.
	writeFile(t, filepath.Join(root, "file"), "x")
	if err := files.Mkdir(api.MkdirRequest{Path: filepath.Join(root, "file"), Parents: true}); err == nil {
		t.Error("mkdir -p over a file succeeded")
	}
}

// A client that announces an upload again while its commit runs (a retry
// after a timeout) must not race with the commit: Begin updates the
// upload's overwrite flag and mode, which Commit reads. Run with -race.
func TestUploadBeginDuringCommitDoesNotRace(t *testing.T) {
	for i := range 20 {
		dir := t.TempDir()
		data := bytes.Repeat([]byte{byte(i)}, 1<<16)
		sum := sha256.Sum256(data)
		req := api.UploadRequest{Path: filepath.Join(dir, "f"), Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Mode: "0600"}
		us := files.NewUploads(files.UploadOptions{})
		st, err := us.Begin(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := us.Put(t.Context(), st.ID, 0, int64(len(data)), bytes.NewReader(data), nil); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Fails once the commit is done and the path exists.
				_, _ = us.Begin(req)
			}
		}()
		if _, err := us.Commit(t.Context(), st.ID); err != nil {
			t.Error(err)
		}
		close(stop)
		<-done
		us.Close()
	}
}
