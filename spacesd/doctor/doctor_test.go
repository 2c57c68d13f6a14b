package doctor_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/capabilities/audio/audiotest"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/media/opus"
	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/spacesd/doctor"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

func statusOf(t *testing.T, rep doctor.Report, name string) doctor.Result {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", name, rep)
	return doctor.Result{}
}

func TestDoctorJSON(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("secret-token\n"), 0o600)
	tests := []struct {
		name     string
		mode     os.FileMode
		display  string
		wantCode int
		want     map[string]doctor.Status
	}{
		{"good token, no display", 0o600, "", 0, map[string]doctor.Status{"token file": doctor.Pass, "display": doctor.Warn, "shell": doctor.Pass, "pty": doctor.Pass}},
		{"world-readable token", 0o644, "", 1, map[string]doctor.Status{"token file": doctor.Fail}},
		{"display refuses", 0o600, ":93", 1, map[string]doctor.Status{"display": doctor.Fail}},
		{"display malformed", 0o600, "nonsense", 1, map[string]doctor.Status{"display": doctor.Fail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Chmod(tok, tt.mode)
			var out, errb bytes.Buffer
			code := doctor.Main([]string{"--json", "--token-file", tok, "--display", tt.display, "--state-dir", t.TempDir()}, &out, &errb, "test")
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; %s %s", code, tt.wantCode, out.String(), errb.String())
			}
			var rep doctor.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out.String())
			}
			if rep.OK != (tt.wantCode == 0) {
				t.Fatalf("ok=%v with exit %d", rep.OK, code)
			}
			if tt.name == "good token, no display" && os.Geteuid() == 0 {
				// As root, on this kind of machine and in CI, the daemon can
				// write cgroups; the process tests require it as well.
				if got := statusOf(t, rep, "containment"); got.Status != doctor.Pass {
					t.Errorf("containment = %+v, want pass as root", got)
				}
			}
			for name, st := range tt.want {
				if got := statusOf(t, rep, name); got.Status != st {
					t.Errorf("%s = %+v, want %s", name, got, st)
				}
			}
			if strings.Contains(out.String(), "secret-token") {
				t.Fatal("doctor printed the token")
			}
		})
	}
}

func TestDoctorHumanAndUsage(t *testing.T) {
	var out, errb bytes.Buffer
	// A state dir of its own: the machine's default one may hold what
	// another daemon left there (a relay it attached to, say).
	code := doctor.Main([]string{"--state-dir", t.TempDir()}, &out, &errb, "test")
	if code != 0 || !strings.Contains(out.String(), "PASS  shell") {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	if code := doctor.Main([]string{"--no-such-flag"}, &out, &errb, "test"); code != 2 {
		t.Fatalf("bad flag: exit %d, want 2", code)
	}
}

// TestDoctorEncoder: the report says whether this build can stream, and a
// build with libvpx passes by opening a real encoder.
func TestDoctorEncoder(t *testing.T) {
	var out, errb bytes.Buffer
	doctor.Main([]string{"--json", "--state-dir", t.TempDir()}, &out, &errb, "test")
	var rep doctor.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	got := statusOf(t, rep, "video encoder")
	want := doctor.Warn
	if vp8.Available {
		want = doctor.Pass
	}
	if got.Status != want || (vp8.Available && !strings.Contains(got.Detail, "libvpx")) {
		t.Fatalf("video encoder check: %+v; want %s", got, want)
	}
}

// TestDoctorSelfSigned: the check of the --tls-self-signed pair skips a
// state directory without one, passes a leaf, warns of a pair that is its
// own CA (an older daemon's) and fails a certificate that does not parse.
func TestDoctorSelfSigned(t *testing.T) {
	tests := []struct {
		name string
		make func(t *testing.T, state string)
		want doctor.Status
	}{
		{"none", func(*testing.T, string) {}, doctor.Skip},
		{"leaf", func(t *testing.T, state string) {
			if _, _, err := server.SelfSigned(state, nil, nil); err != nil {
				t.Fatal(err)
			}
		}, doctor.Pass},
		{"CA", func(t *testing.T, state string) { tlstest.WriteCAPair(t, filepath.Join(state, server.SelfSignedDir)) }, doctor.Warn},
		{"garbage", func(t *testing.T, state string) {
			dir := filepath.Join(state, server.SelfSignedDir)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, server.SelfSignedCert), []byte("not a certificate"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, doctor.Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := t.TempDir()
			tt.make(t, state)
			var out, errb bytes.Buffer
			doctor.Main([]string{"--json", "--display", "", "--state-dir", state}, &out, &errb, "test")
			var rep doctor.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("not JSON: %v\n%s%s", err, out.String(), errb.String())
			}
			got := statusOf(t, rep, "tls self-signed")
			needsFix := tt.want == doctor.Warn || tt.want == doctor.Fail
			if got.Status != tt.want || needsFix != (got.Fix != "") {
				t.Fatalf("tls self-signed = %+v, want %s (with a fix: %v)", got, tt.want, needsFix)
			}
		})
	}
}

// TestDoctorSound: with a real sound server (PULSE_SERVER, as the daemon
// finds it) the sound check passes in a build with Opus; with none it
// warns (the stream works without sound) and says what to start.
func TestDoctorSound(t *testing.T) {
	audiotest.Require(t)
	srv := audiotest.StartPulse(t)
	for _, tt := range []struct {
		server string
		want   doctor.Status
	}{
		{srv.Addr, doctor.Pass},
		{"unix:" + filepath.Join(t.TempDir(), "none"), doctor.Warn},
	} {
		t.Setenv("PULSE_SERVER", tt.server)
		var out, errb bytes.Buffer
		doctor.Main([]string{"--json", "--state-dir", t.TempDir()}, &out, &errb, "test")
		var rep doctor.Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out.String())
		}
		got := statusOf(t, rep, "sound server")
		want := tt.want
		if !opus.Available {
			want = doctor.Warn
		}
		if got.Status != want || want == doctor.Warn && (got.Detail == "" || got.Fix == "") {
			t.Fatalf("sound server check with PULSE_SERVER=%s: %+v; want %s", tt.server, got, want)
		}
	}
}
