package api_test

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
)

func TestErrorsKeepTheirCause(t *testing.T) {
	cause := fs.ErrNotExist
	err := api.Errorf(api.KindNotFound, "stat /x: %w", cause)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("Errorf lost the wrapped cause")
	}
	if err.Retryable || err.Hint == "" {
		t.Errorf("not_found defaults: %+v", err)
	}
	missing := api.CapabilityMissing(api.FeatureScreenshot, "no X display: DISPLAY is unset")
	if missing.Feature != "screenshot" || missing.Limitation == "" {
		t.Errorf("capability_missing: %+v", missing)
	}
	if api.AsError(errors.New("boom")).Kind != api.KindEnv {
		t.Error("a foreign error is not kind env")
	}
}

func TestFileModeString(t *testing.T) {
	for mode, want := range map[fs.FileMode]string{0o644: "0644", 0o755 | fs.ModeDir: "0755", 0: "0000", 0o7: "0007", 0o4755: "0755"} {
		if got := api.FileModeString(mode); got != want {
			t.Errorf("FileModeString(%o) = %q, want %q", mode, got, want)
		}
	}
}

func TestParseFingerprint(t *testing.T) {
	der := []byte("a certificate")
	fp := api.CertFingerprint(der)
	want := sha256.Sum256(der)
	upper := strings.ToUpper(strings.TrimPrefix(fp, "sha256:"))
	var colons []string
	for i := 0; i < len(upper); i += 2 {
		colons = append(colons, upper[i:i+2])
	}
	for _, in := range []string{fp, strings.ToUpper(fp), strings.Join(colons, ":"), "sha256 Fingerprint=" + strings.Join(colons, ":"), " " + fp + "\n"} {
		got, err := api.ParseFingerprint(in)
		if err != nil || got != want {
			t.Errorf("ParseFingerprint(%q) = %x, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "sha256:", "sha256:abc", "md5:" + fp[7:], fp + "00", "sha256:" + strings.Repeat("zz", 32)} {
		if _, err := api.ParseFingerprint(bad); api.KindOf(err) != api.KindInvalidArgument {
			t.Errorf("ParseFingerprint(%q): %v, want invalid_argument", bad, err)
		}
	}
}
