package files_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
)

// Append grows an existing file, makes a missing one, and follows a final
// symlink as a write does.
func TestAppend(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	res, err := files.Append(p, strings.NewReader("one "))
	if err != nil || res.Size != 4 {
		t.Fatalf("append to a missing file: %+v, %v", res, err)
	}
	res, err = files.Append(p, strings.NewReader("two"))
	sum := sha256.Sum256([]byte("two"))
	if err != nil || res.Size != 7 || res.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("append: %+v, %v; want size 7 and the sha256 of the appended bytes", res, err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	if _, err := files.Append(link, strings.NewReader(" three")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one two three" {
		t.Fatalf("file holds %q", b)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi, err)
	}
	if _, err := files.Append(dir, strings.NewReader("x")); api.KindOf(err) != api.KindInvalidArgument {
		t.Fatalf("append to a directory: %v, want invalid_argument", err)
	}
	if _, err := files.Append("relative", strings.NewReader("x")); api.KindOf(err) != api.KindInvalidArgument {
		t.Fatalf("append to a relative path: %v", err)
	}
}

// A body that fails midway, or a disk that fills up, leaves the file at its
// old size and content: never a part of the new bytes.
func TestAppendFailureCutsBack(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	writeFile(t, p, "kept")
	body := io.MultiReader(bytes.NewReader(make([]byte, 3<<20)), iotestErr{})
	_, err := files.Append(p, body)
	if api.KindOf(err) != api.KindTransferFailed {
		t.Fatalf("append of a failing body: %v, want transfer_failed", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "kept" {
		t.Fatalf("after a failed append the file holds %d bytes", len(b))
	}

	full := smallTmpfs(t, "1m")
	q := filepath.Join(full, "f")
	writeFile(t, q, "kept")
	_, err = files.Append(q, bytes.NewReader(make([]byte, 2<<20)))
	if api.KindOf(err) != api.KindIO || !strings.Contains(err.Error(), "disk full while appending to "+q) {
		t.Fatalf("append past a full disk: %v, want kind io, disk full", err)
	}
	if b, _ := os.ReadFile(q); string(b) != "kept" {
		t.Fatalf("after a full disk the file holds %d bytes", len(b))
	}
}

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errors.New("the sender went away") }

// StatFollow describes a symlink's target; Stat the link itself.
func TestStatFollow(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	writeFile(t, p, "12345")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	fi, err := files.StatFollow(link)
	if err != nil || fi.Type != api.TypeFile || fi.Size != 5 {
		t.Fatalf("StatFollow(link) = %+v, %v", fi, err)
	}
	if fi, _ := files.Stat(link); fi.Type != api.TypeSymlink {
		t.Fatalf("Stat(link) = %+v", fi)
	}
	if _, err := files.StatFollow(filepath.Join(dir, "missing")); api.KindOf(err) != api.KindNotFound {
		t.Fatalf("StatFollow(missing): %v", err)
	}
}
