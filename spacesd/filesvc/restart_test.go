package filesvc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// eventually polls cond until it holds or the test's patience runs out:
// it waits for a state, it does not measure time.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// buildDaemon builds cua-spacesd from this tree into the test's directory.
func buildDaemon(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cua-spacesd")
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "github.com/trycua/cua-spacesd/spacesd").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	return bin
}

// daemonProc is a cua-spacesd running as a process of its own.
type daemonProc struct {
	cmd    *exec.Cmd
	client *client.Client
	done   chan struct{}
}

// startDaemon runs the daemon bin on a loopback port with stateDir.
func startDaemon(t *testing.T, bin, stateDir string) *daemonProc {
	t.Helper()
	tok := spacesdtest.Token()
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--state-dir", stateDir, "--log-level", "debug")
	cmd.Env = append(os.Environ(), "CUA_SPACESD_TOKEN="+tok)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemonProc{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(d.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "cua-spacesd serving" {
				addr <- line.Addr
			}
			t.Logf("daemon %d: %s", cmd.Process.Pid, sc.Bytes())
		}
	}()
	t.Cleanup(func() { d.kill(t) })
	select {
	case a := <-addr:
		if d.client, err = client.New("http://"+a, tok); err != nil {
			t.Fatal(err)
		}
	case <-d.done:
		t.Fatal("the daemon ended before serving")
	case <-time.After(30 * time.Second):
		t.Fatal("the daemon did not start serving")
	}
	return d
}

// kill ends the daemon with SIGKILL, as a crash would: no cleanup runs.
func (d *daemonProc) kill(t *testing.T) {
	if d.cmd.ProcessState != nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
	_ = d.cmd.Wait()
}

// openTmpfileSize returns the size of an unnamed (O_TMPFILE) file that the
// process holds open in dir, or -1: "dir/#123 (deleted)" in /proc.
func openTmpfileSize(pid int, dir string) int64 {
	fds := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, _ := os.ReadDir(fds)
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(fds, e.Name()))
		if err != nil || !strings.HasPrefix(target, dir+"/#") {
			continue
		}
		if fi, err := os.Stat(filepath.Join(fds, e.Name())); err == nil {
			return fi.Size()
		}
	}
	return -1
}

// A daemon killed in the middle of a write and of an upload comes back
// with the upload where it was (GET /v1/uploads/{id} answers, the client
// resumes and commits) and no temp file of the write anywhere. An upload
// idle past the timeout while the daemon was down is removed at start.
// Seen before: after a restart the upload was unknown until announced
// again, and a crash could leave temp files behind for ever.
func TestDaemonKilledMidTransferComesBackClean(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the daemon's descriptors in /proc")
	}
	ctx := t.Context()
	stateDir := filepath.Join(t.TempDir(), "state")
	dir := t.TempDir()
	bin := buildDaemon(t)
	d := startDaemon(t, bin, stateDir)
	c := d.client

	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(i * 13 / 7)
	}
	target := filepath.Join(dir, "big.bin")
	st, err := c.BeginUpload(ctx, api.UploadRequest{Path: target, Size: int64(len(data)), SHA256: sha(data)})
	if err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "stale.bin")
	staleSt, err := c.BeginUpload(ctx, api.UploadRequest{Path: stale, Size: 10, SHA256: sha([]byte("0123456789"))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutChunk(ctx, staleSt.ID, 0, strings.NewReader("01234"), 5); err != nil {
		t.Fatal(err)
	}

	// An upload chunk and a write, each stopped half way: the first MiB of
	// each has landed (the daemon writes in blocks of 1 MiB) when the
	// daemon is killed.
	upPR, upPW := io.Pipe()
	defer upPW.Close()
	go func() { _, _ = c.PutChunk(context.Background(), st.ID, 0, upPR, int64(len(data))) }()
	writePR, writePW := io.Pipe()
	defer writePW.Close()
	old := filepath.Join(dir, "old.txt")
	if err := os.WriteFile(old, []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = c.Write(context.Background(), old, writePR, int64(len(data)), "") }()
	if _, err := upPW.Write(data[:3<<19]); err != nil {
		t.Fatal(err)
	}
	if _, err := writePW.Write(data[:3<<19]); err != nil {
		t.Fatal(err)
	}
	var partial string
	eventually(t, "a MiB of the upload in its partial file", func() bool {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".cua-upload-"+st.ID) {
				partial = filepath.Join(dir, e.Name())
				fi, err := os.Stat(partial)
				return err == nil && fi.Size() >= 1<<20
			}
		}
		return false
	})
	eventually(t, "a MiB of the write in an unnamed file", func() bool { return openTmpfileSize(d.cmd.Process.Pid, dir) >= 1<<20 })
	d.kill(t)
	upPW.CloseWithError(io.ErrClosedPipe)
	writePW.CloseWithError(io.ErrClosedPipe)

	// The stale upload's last chunk landed two hours ago (its partial
	// file's mtime says so): past the idle timeout by the next start.
	staleStale := time.Now().Add(-2 * time.Hour)
	for _, e := range entries(t, dir) {
		if strings.Contains(e, ".cua-upload-"+staleSt.ID) {
			if err := os.Chtimes(filepath.Join(dir, e), staleStale, staleStale); err != nil {
				t.Fatal(err)
			}
		}
	}
	landed, err := os.Stat(partial)
	if err != nil {
		t.Fatal(err)
	}

	d2 := startDaemon(t, bin, stateDir)
	c2 := d2.client
	cur, err := c2.UploadStatus(ctx, st.ID)
	if err != nil || cur.Offset != landed.Size() {
		t.Fatalf("status after the restart: %+v %v; want offset %d", cur, err, landed.Size())
	}
	if _, err := c2.UploadStatus(ctx, staleSt.ID); api.KindOf(err) != api.KindNotFound {
		t.Errorf("the stale upload after the restart: %v; want not_found", err)
	}
	if _, err := upload(ctx, c2, st.ID, data, cur.Offset, 1<<20, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.CommitUpload(ctx, st.ID); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); !bytes.Equal(b, data) {
		t.Error("the resumed upload's content differs")
	}
	if b, _ := os.ReadFile(old); string(b) != "before" {
		t.Errorf("the interrupted write changed the file: %q", b[:min(len(b), 20)])
	}
	if got := strings.Join(entries(t, dir), " "); got != "big.bin old.txt" {
		t.Errorf("left %q; want only big.bin old.txt", got)
	}
	if n := len(entries(t, filepath.Join(stateDir, "files", "uploads"))); n != 0 {
		t.Errorf("%d upload records left in the journal", n)
	}
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	return strings.Fields(dirNames(t, dir))
}
