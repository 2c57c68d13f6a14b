package doctor_test

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/spacesd/doctor"
)

// TestSelfTestCommand: the selftest command passes (exit 0) with the
// encoder, and without it fails (exit 1) saying why, as JSON and for a
// person alike; bad usage is exit 2.
func TestSelfTestCommand(t *testing.T) {
	if !vp8.Available && testenv.CI() {
		t.Fatalf("this test binary has no VP8 encoder (%s), and CI=true requires it", vp8.Limitation)
	}
	wantCode := 1
	if vp8.Available {
		wantCode = 0
	}

	var out, errb bytes.Buffer
	if code := doctor.SelfTestMain([]string{"--json"}, &out, &errb, "v9.9.9"); code != wantCode {
		t.Fatalf("selftest --json: exit %d, want %d\n%s%s", code, wantCode, out.String(), errb.String())
	}
	var res doctor.SelfTestResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if res.Version != "v9.9.9" || res.OS != runtime.GOOS || res.Arch != runtime.GOARCH || res.OK != vp8.Available {
		t.Fatalf("result %+v", res)
	}
	if vp8.Available && (res.Frames == 0 || len(res.Checks) == 0 || res.Error != "") {
		t.Fatalf("a passing result without frames: %+v", res)
	}
	if !vp8.Available && res.Error != vp8.Limitation {
		t.Fatalf("error %q, want the limitation %q", res.Error, vp8.Limitation)
	}

	out.Reset()
	code := doctor.SelfTestMain(nil, &out, &errb, "v9.9.9")
	want := "PASS: every frame decodes"
	if !vp8.Available {
		want = "FAIL: " + vp8.Limitation
	}
	if code != wantCode || !strings.Contains(out.String(), want) {
		t.Fatalf("selftest: exit %d, want %d and %q in\n%s", code, wantCode, want, out.String())
	}

	for _, bad := range [][]string{{"--no-such-flag"}, {"extra"}} {
		if code := doctor.SelfTestMain(bad, &out, &errb, "v9.9.9"); code != 2 {
			t.Errorf("selftest %v: exit %d, want 2", bad, code)
		}
	}
}
