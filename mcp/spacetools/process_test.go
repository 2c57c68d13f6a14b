package spacetools

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
)

func TestCompleteRunes(t *testing.T) {
	check := "✓" // 3 bytes: e2 9c 93
	for _, tc := range []struct {
		name  string
		in    string
		final bool
		keep  string
		held  int
	}{
		{"ascii", "abc", false, "abc", 0},
		{"whole character", "a" + check, false, "a" + check, 0},
		{"one byte of three", "a" + check[:1], false, "a", 1},
		{"two bytes of three", "a" + check[:2], false, "a", 2},
		{"only a part", check[:2], false, "", 2},
		{"a part, final", "a" + check[:2], true, "a" + check[:2], 0},
		{"stray continuation bytes", "a\x9c\x93\x93\x93", false, "a\x9c\x93\x93\x93", 0},
		{"empty", "", false, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keep, held := completeRunes([]byte(tc.in), tc.final)
			if string(keep) != tc.keep || held != tc.held {
				t.Fatalf("completeRunes(%q, %v) = %q, %d; want %q, %d", tc.in, tc.final, keep, held, tc.keep, tc.held)
			}
		})
	}
}

// A character cut by a read's end is read whole by the next read: the
// offsets answered stay before it.
func TestProcessOutputHoldsACutCharacter(t *testing.T) {
	text := []byte("Привет ✓")
	var got []byte
	var off int64
	for off < int64(len(text)) {
		end := min(off+4, int64(len(text)))
		o := processOutput("p", &client.Output{
			Stdout: text[off:end], StdoutOffset: end, More: end < int64(len(text)),
			Process: api.ProcessInfo{State: api.StateRunning},
		})
		if !utf8.ValidString(o.Stdout) || o.StdoutOffset <= off {
			t.Fatalf("read from %d answered %q, next offset %d", off, o.Stdout, o.StdoutOffset)
		}
		got = append(got, o.Stdout...)
		off = o.StdoutOffset
	}
	if !bytes.Equal(got, text) {
		t.Fatalf("read %q, want %q", got, text)
	}
}

func FuzzCompleteRunes(f *testing.F) {
	f.Add([]byte("Привет ✓"), false)
	f.Add([]byte("a\xe2\x9c"), false)
	f.Add([]byte("\xff\xfe"), true)
	f.Fuzz(func(t *testing.T, b []byte, final bool) {
		keep, held := completeRunes(b, final)
		if !bytes.Equal(append(append([]byte{}, keep...), b[len(keep):]...), b) || len(keep)+held != len(b) {
			t.Fatalf("completeRunes(%q) = %q, %d: not a split of the input", b, keep, held)
		}
		if held < 0 || held >= utf8.UTFMax || (final && held != 0) {
			t.Fatalf("completeRunes(%q, %v) held %d bytes", b, final, held)
		}
		// What a valid stream cut anywhere keeps is valid on its own.
		if !final && (utf8.Valid(b) || validPrefix(b)) {
			if !utf8.Valid(keep) {
				t.Fatalf("completeRunes(%q) kept %q, not valid UTF-8", b, keep)
			}
		}
	})
}

// validPrefix reports whether b is valid UTF-8 cut inside its last character.
func validPrefix(b []byte) bool {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return utf8.Valid(b[:i]) && !utf8.FullRune(b[i:])
		}
	}
	return false
}
