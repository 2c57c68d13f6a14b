package filesvc_test

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/trycua/cua-spacesd/api"
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
