package files_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
)

// A new Uploads with the same journal takes the unfinished uploads up
// again, without an announcement; one whose partial file is no longer the
// file made for it is not resumed (nor is the impostor written into).
func TestUploadsComeBackFromTheJournal(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	dir := t.TempDir()
	data := bytes.Repeat([]byte("journal "), 1<<15)
	sum := sha256.Sum256(data)
	reqA := api.UploadRequest{Path: filepath.Join(dir, "a"), Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Mode: "0600"}
	reqB := api.UploadRequest{Path: filepath.Join(dir, "b"), Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}

	j1, err := files.OpenJournal(state, nil)
	if err != nil {
		t.Fatal(err)
	}
	us1 := files.NewUploads(files.UploadOptions{Journal: j1})
	a, err := us1.Begin(reqA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := us1.Begin(reqB)
	if err != nil {
		t.Fatal(err)
	}
	half := int64(len(data) / 2)
	if _, err := us1.Put(t.Context(), a.ID, 0, half, bytes.NewReader(data[:half]), nil); err != nil {
		t.Fatal(err)
	}
	us1.Close()
	j1.Close()

	// B's partial file is swapped for another file at the same name (made
	// while the partial still exists, so that it cannot reuse its inode).
	var partialB string
	for _, n := range entries(t, dir) {
		if strings.HasSuffix(n, b.ID) {
			partialB = filepath.Join(dir, n)
		}
	}
	writeFile(t, partialB+".new", "impostor")
	if err := os.Rename(partialB+".new", partialB); err != nil {
		t.Fatal(err)
	}

	j2, err := files.OpenJournal(state, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	us2 := files.NewUploads(files.UploadOptions{Journal: j2})
	defer us2.Close()
	st, err := us2.Status(a.ID)
	if err != nil || st.Offset != half || st.Path != reqA.Path {
		t.Fatalf("A after the restart: %+v %v; want offset %d", st, err, half)
	}
	if _, err := us2.Status(b.ID); api.KindOf(err) != api.KindNotFound {
		t.Errorf("B (partial file replaced) after the restart: %v; want not_found", err)
	}
	if _, err := us2.Put(t.Context(), a.ID, half, -1, bytes.NewReader(data[half:]), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := us2.Commit(t.Context(), a.ID); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(reqA.Path); err != nil || fi.Mode() != 0o600 || fi.Size() != int64(len(data)) {
		t.Errorf("A: %v %v; want 0600 (the mode announced before the restart), %d bytes", fi.Mode(), err, len(data))
	}
	if b, _ := os.ReadFile(partialB); string(b) != "impostor" {
		t.Errorf("the impostor now holds %q", b)
	}
	if recs := entries(t, filepath.Join(state, "files", "uploads")); len(recs) != 0 {
		t.Errorf("records left: %v", recs)
	}
}
