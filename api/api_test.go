package api_test

import (
	"errors"
	"io/fs"
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
