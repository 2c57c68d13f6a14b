package doctor_test

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/media/opus"
	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/spacesd/doctor"
)

// TestSelfTestCommand: the selftest command passes (exit 0) with the
// encoders, VP8's and Opus's, and without them fails (exit 1) saying why,
// as JSON and for a person alike; bad usage is exit 2.
func TestSelfTestCommand(t *testing.T) {
	if !vp8.Available && testenv.CI() {
		t.Fatalf("this test binary has no VP8 encoder (%s), and CI=true requires it", vp8.Limitation)
	}
	if !opus.Available && testenv.CI() {
		t.Fatalf("this test binary has no Opus encoder (%s), and CI=true requires it", opus.Limitation)
	}
	// One build has both encoders or neither: cgo links libvpx and libopus
	// together.
	if vp8.Available != opus.Available {
		t.Fatalf("VP8 encoder %v, Opus encoder %v", vp8.Available, opus.Available)
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
	if res.Version != "v9.9.9" || res.OS != runtime.GOOS || res.Arch != runtime.GOARCH || res.OK != vp8.Available || res.Audio.OK != opus.Available {
		t.Fatalf("result %+v", res)
	}
	if vp8.Available && (res.Frames == 0 || len(res.Checks) == 0 || res.Error != "") {
		t.Fatalf("a passing result without frames: %+v", res)
	}
	if opus.Available && (res.Audio.Packets == 0 || len(res.Audio.Checks) == 0 || res.Audio.Silence.DTX == 0 || res.Audio.Error != "" || res.Audio.Encoder != opus.Version()) {
		t.Fatalf("a passing result without sound: %+v", res.Audio)
	}
	if !vp8.Available && (res.Error != vp8.Limitation || res.Audio.Error != opus.Limitation) {
		t.Fatalf("errors %q and %q, want the limitations %q and %q", res.Error, res.Audio.Error, vp8.Limitation, opus.Limitation)
	}
	// The JSON's shape: VP8's report at the top, as before the sound.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ok", "encoder", "frames", "checks", "audio"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("selftest --json has no %q: %s", k, out.String())
		}
	}

	out.Reset()
	code := doctor.SelfTestMain(nil, &out, &errb, "v9.9.9")
	wants := []string{"PASS: every frame decodes", "every tone at its frequency", "Opus encoder " + opus.Version()}
	if !vp8.Available {
		wants = []string{"FAIL: " + vp8.Limitation, "FAIL: audio: " + opus.Limitation}
	}
	for _, want := range wants {
		if code != wantCode || !strings.Contains(out.String(), want) {
			t.Fatalf("selftest: exit %d, want %d and %q in\n%s", code, wantCode, want, out.String())
		}
	}
	t.Logf("selftest:\n%s", out.String())

	for _, bad := range [][]string{{"--no-such-flag"}, {"extra"}} {
		if code := doctor.SelfTestMain(bad, &out, &errb, "v9.9.9"); code != 2 {
			t.Errorf("selftest %v: exit %d, want 2", bad, code)
		}
	}
}
