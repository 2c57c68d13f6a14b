package files

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func names(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range ents {
		n = append(n, e.Name())
	}
	return strings.Join(n, " ")
}

// The named temp file of a write (file systems without O_TMPFILE) is
// recorded before it is made; a daemon that dies before the rename leaves
// it behind, and the next start removes it. A file at a recorded name that
// is not ours is left alone: the journal must not become a way to make
// the daemon remove other files.
func TestJournalSweepsTheTempFilesOfACrash(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	j, err := OpenJournal(state, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := newWalker("test").walk(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var crashed []*tempFile
	for range 2 {
		tf, err := newTempFile(d, "f", false, j)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tf.f.Write([]byte("half of the new")); err != nil {
			t.Fatal(err)
		}
		// The daemon dies here: no commit, no discard. Only its
		// descriptors go.
		tf.f.Close()
		crashed = append(crashed, tf)
	}
	// The second temp file's name now holds someone else's file.
	other := filepath.Join(dir, crashed[1].name)
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.WriteFile(other, []byte("theirs"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(strings.Fields(names(t, filepath.Join(state, journalDir, journalWrites)))); got != 2 {
		t.Fatalf("%d write records; want 2", got)
	}
	j.Close()

	j2, err := OpenJournal(state, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	want := "f"
	if os.Geteuid() == 0 {
		want = crashed[1].name + " f"
	}
	if got := names(t, dir); got != want {
		t.Errorf("after the restart the directory holds %q; want %q", got, want)
	}
	if got := names(t, filepath.Join(state, journalDir, journalWrites)); got != "" {
		t.Errorf("write records left: %q", got)
	}
}

// A state directory others may write in, or one another daemon holds, is
// refused with a message that says why.
func TestJournalRefusesASharedStateDirectory(t *testing.T) {
	state := t.TempDir()
	if err := os.Chmod(state, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenJournal(state, nil); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("world-writable: %v", err)
	}
	if err := os.Chmod(state, 0o700); err != nil {
		t.Fatal(err)
	}
	j, err := OpenJournal(state, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := OpenJournal(state, nil); err == nil || !strings.Contains(err.Error(), "in use by another cua-spacesd") {
		t.Errorf("second daemon: %v", err)
	}
}

// FuzzJournalRecords: a record the parsers accept names only what the
// daemon may act on (a temp file's or a partial file's name, one path
// element, in an absolute clean directory; an id derived from the
// announcement), and survives a round trip unchanged.
func FuzzJournalRecords(f *testing.F) {
	f.Add([]byte(`{"v":1,"dir":"/tmp/d","name":".f.cua-write-0123456789abcdef"}`))
	f.Add([]byte(`{"v":1,"dir":"/tmp/d","name":"passwd"}`))
	f.Add([]byte(`{"v":1,"id":"x","path":"/tmp/f","size":1,"sha256":"00","partial":".f.cua-upload-x","dev":1,"ino":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := parseWriteRecord(b); err == nil {
			if !isTempName(r.Name) || strings.Contains(r.Name, "/") || !filepath.IsAbs(r.Dir) {
				t.Fatalf("accepted %+v", r)
			}
			again, _ := json.Marshal(r)
			if r2, err := parseWriteRecord(again); err != nil || r2 != r {
				t.Fatalf("round trip: %+v -> %+v %v", r, r2, err)
			}
		}
		if r, op, err := parseUploadRecord(b); err == nil {
			if r.ID != uploadID(op) || strings.Contains(r.Partial, "/") || !strings.HasSuffix(r.Partial, partialInfix+r.ID) {
				t.Fatalf("accepted %+v", r)
			}
			again, _ := json.Marshal(r)
			if r2, _, err := parseUploadRecord(again); err != nil || r2 != r {
				t.Fatalf("round trip: %+v -> %+v %v", r, r2, err)
			}
		}
	})
}

// The parsers take the records the journal writes and nothing that would
// point the daemon elsewhere; the seed corpus holds one of each.
func TestJournalRecordParsers(t *testing.T) {
	seeds, err := filepath.Glob("testdata/fuzz/FuzzJournalRecords/*")
	if err != nil || len(seeds) == 0 {
		t.Fatalf("no seeds: %v", err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// The corpus format: a header line, then []byte("...").
		lines := strings.SplitN(string(b), "\n", 2)
		var rec string
		if _, err := fmt.Sscanf(strings.TrimSpace(lines[1]), "[]byte(%q)", &rec); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		_, werr := parseWriteRecord([]byte(rec))
		_, _, uerr := parseUploadRecord([]byte(rec))
		name := filepath.Base(p)
		valid := strings.HasSuffix(name, "-valid")
		if got := (strings.HasPrefix(name, "write") && werr == nil) || (strings.HasPrefix(name, "upload") && uerr == nil); got != valid {
			t.Errorf("%s: accepted=%v (write: %v, upload: %v); want %v", name, got, werr, uerr, valid)
		}
	}
}
