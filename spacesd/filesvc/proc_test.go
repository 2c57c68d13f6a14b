package filesvc_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// A /proc file (size 0 to stat) reads whole, with a size, a sha256 trailer
// and ranges that agree with its content. Seen before: /proc/cpuinfo
// answered 200 with 0 bytes.
func TestReadProcFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("procfs is Linux's")
	}
	want, err := os.ReadFile("/proc/version")
	if err != nil {
		t.Fatal(err)
	}
	d := spacesdtest.Start(t, spacesdtest.Options{})
	resp, err := d.Client.Do(t.Context(), http.MethodGet, api.PathFileContent, url.Values{"path": {"/proc/version"}}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(got) != string(want) {
		t.Fatalf("read %q, %v; want %q", got, err, want)
	}
	if s := resp.Header.Get(api.HeaderFileSize); s != strconv.Itoa(len(want)) {
		t.Errorf("%s: %s; want %d", api.HeaderFileSize, s, len(want))
	}
	if tr := resp.Trailer.Get(api.HeaderSHA256); tr != sha(want) {
		t.Errorf("trailer sha256 %q; want %s", tr, sha(want))
	}
	r, body := rawGet(t, d, api.PathFileContent+"?path=/proc/version", map[string]string{"Range": "bytes=0-4"})
	if r.StatusCode != http.StatusPartialContent || string(body) != string(want[:5]) {
		t.Errorf("Range bytes=0-4: %d %q; want 206 %q", r.StatusCode, body, want[:5])
	}
	r, _ = rawGet(t, d, api.PathFileContent+"?path=/proc/version&offset="+strconv.Itoa(len(want)), nil)
	if r.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		t.Errorf("offset at the end: %d; want 416", r.StatusCode)
	}
}

// A file that never ends (/proc/kmsg: size 0 to stat, and a read that
// waits for the kernel's next message) answers what it had ready, and
// leaves no descriptor open in the daemon once its client has gone. Seen
// before: the read blocked for ever, and each request left its descriptor
// open after the client left (seven of them).
func TestReadFileThatNeverEnds(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("procfs is Linux's")
	}
	const kmsg = "/proc/kmsg"
	if os.Geteuid() != 0 {
		testenv.Missing(t, "needs root, to read %s", kmsg)
	}
	d := spacesdtest.Start(t, spacesdtest.Options{})
	const requests = 3
	for range requests {
		// The bound only ends the wait of a read that hangs; the client
		// then leaves, as the one seen did.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		resp, err := d.Client.Do(ctx, http.MethodGet, api.PathFileContent, url.Values{"path": {kmsg}}, nil, "")
		if err != nil {
			t.Errorf("GET %s did not answer: %v", kmsg, err)
		} else {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %d %v; want 200 with what it had ready", kmsg, resp.StatusCode, err)
			}
		}
		cancel()
	}
	// The daemon runs in this process: its descriptors are ours.
	eventually(t, "no descriptor of "+kmsg+" left open", func() bool { return len(fdsOf(t, kmsg)) == 0 })
}

// fdsOf lists this process's descriptors open on path.
func fdsOf(t *testing.T, path string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && l == path {
			out = append(out, e.Name())
		}
	}
	return out
}
