package filesvc_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// A whole-file read carries the sha256 of what was sent as a trailer; a
// ranged read carries none (and a Content-Length instead).
func TestReadCarriesSHA256Trailer(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	path := filepath.Join(t.TempDir(), "f.bin")
	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)

	resp, err := d.Client.Do(t.Context(), http.MethodGet, api.PathFileContent, url.Values{"path": {path}}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(got) != len(data) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if tr := resp.Trailer.Get(api.HeaderSHA256); tr != hex.EncodeToString(want[:]) {
		t.Fatalf("trailer sha256 = %q, want %x", tr, want)
	}

	body, _, err := d.Client.Read(t.Context(), path, 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(body)
	body.Close()
	if string(part) != string(data[10:110]) {
		t.Fatal("ranged read returned other bytes")
	}
}
