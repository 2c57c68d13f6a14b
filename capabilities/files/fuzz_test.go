package files_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
)

// FuzzCleanPath: a path that passes is absolute, clean, NUL-free and
// without "..", and cleaning it again changes nothing.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/", "/a/b", "//a//b/", "/a/./b", "/a/../b", "a", "", "/a\x00b", "/..", "/a/..b", "/a/b/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := files.CleanPath("path", p)
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("kind %s", api.KindOf(err))
			}
			return
		}
		if !filepath.IsAbs(got) || filepath.Clean(got) != got || strings.ContainsRune(got, 0) ||
			strings.Contains("/"+got+"/", "/../") {
			t.Fatalf("CleanPath(%q) = %q", p, got)
		}
		if again, err := files.CleanPath("path", got); err != nil || again != got {
			t.Fatalf("not idempotent: %q -> %q, %v", got, again, err)
		}
	})
}

// FuzzParseRange: an accepted Range resolves to a window inside the file.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-", "bytes=0-0", "bytes=10-20", "bytes=-5", "bytes=-0", "bytes=5-1",
		"bytes=0-9223372036854775807", "bytes=1-2,3-4", "items=0-1", "bytes= 1 - 2", "bytes=", "bytes=-", "bytes=+1-2"} {
		f.Add(s, int64(100))
	}
	f.Fuzz(func(t *testing.T, h string, size int64) {
		if size < 0 {
			size = -size
		}
		if size < 0 {
			return
		}
		w, ok, err := files.ParseRange("/f", h, size)
		if err != nil {
			if k := api.KindOf(err); k != api.KindInvalidArgument {
				t.Fatalf("kind %s", k)
			}
			return
		}
		if !ok {
			if h != "" {
				t.Fatalf("%q ignored", h)
			}
			return
		}
		off, n, err := w.Resolve("/f", size)
		if err != nil {
			return
		}
		if off < 0 || n < 0 || off+n > size {
			t.Fatalf("Range %q on %d bytes -> [%d, +%d)", h, size, off, n)
		}
	})
}

// FuzzRequestBodies decodes the JSON bodies of mkdir, move, remove and
// upload as the server does, and checks them: they only validate, nothing
// touches the disk. An accepted request holds clean absolute paths.
func FuzzRequestBodies(f *testing.F) {
	for _, s := range []string{
		`{"path":"/tmp/a","parents":true,"mode":"0755"}`,
		`{"path":"rel"}`,
		`{"from":"/a","to":"/b","overwrite":true}`,
		`{"from":"/a","to":"/a/b"}`,
		`{"path":"/","recursive":true}`,
		`{"path":"/x/y","size":3,"sha256":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad","mode":"644"}`,
		`{"path":"/x","size":-1,"sha256":"zz"}`,
		`{"path":"/a\u0000b"}`,
		`{}`, `[]`, `null`, `{"mode":"07777"}`,
	} {
		f.Add([]byte(s))
	}
	decode := func(b []byte, v any) bool {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		return dec.Decode(v) == nil
	}
	clean := func(t *testing.T, p string) {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			t.Fatalf("accepted unclean path %q", p)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var mk api.MkdirRequest
		if decode(b, &mk) {
			if op, err := files.CheckMkdir(mk); err == nil {
				clean(t, op.Path)
				if op.Mode&^(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
					t.Fatalf("mode %v", op.Mode)
				}
			}
		}
		var mv api.MoveRequest
		if decode(b, &mv) {
			if r, err := files.CheckMove(mv); err == nil {
				clean(t, r.From)
				clean(t, r.To)
				if r.From == "/" || r.To == "/" || r.From == r.To {
					t.Fatalf("accepted move %+v", r)
				}
			}
		}
		var rm api.RemoveRequest
		if decode(b, &rm) {
			if r, err := files.CheckRemove(rm); err == nil {
				clean(t, r.Path)
				if r.Path == "/" {
					t.Fatal("accepted remove of /")
				}
			}
		}
		var up api.UploadRequest
		if decode(b, &up) {
			if op, err := files.CheckUpload(up); err == nil {
				clean(t, op.Path)
				if op.Size < 0 || len(op.SHA256) != 64 {
					t.Fatalf("accepted upload %+v", op)
				}
			}
		}
	})
}
