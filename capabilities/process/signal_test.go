package process_test

import (
	"syscall"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
)

func TestParseSignal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want syscall.Signal
		ok   bool
	}{
		{"TERM", syscall.SIGTERM, true}, {"SIGTERM", syscall.SIGTERM, true}, {"kill", syscall.SIGKILL, true},
		{"SIGINT", syscall.SIGINT, true}, {"HUP", syscall.SIGHUP, true}, {"QUIT", syscall.SIGQUIT, true},
		{"USR1", syscall.SIGUSR1, true}, {"sigusr2", syscall.SIGUSR2, true}, {"STOP", syscall.SIGSTOP, true},
		{"CONT", syscall.SIGCONT, true}, {" TERM ", syscall.SIGTERM, true},
		{"", 0, false}, {"9", 0, false}, {"SIG", 0, false}, {"SEGV", 0, false}, {"SIGSIGTERM", 0, false},
	} {
		got, err := process.ParseSignal(tc.in)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if !tc.ok && api.KindOf(err) != api.KindInvalidArgument {
			t.Errorf("ParseSignal(%q) = %v, %v; want invalid_argument", tc.in, got, err)
		}
	}
}

func FuzzParseSignal(f *testing.F) {
	for _, s := range []string{"TERM", "SIGKILL", "int", "", "SIG", "USR1\x00", "ＴＥＲＭ", "sigsigterm"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		sig, err := process.ParseSignal(name)
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("kind %q", api.KindOf(err))
			}
			return
		}
		// A parsed signal names itself back, and parses to itself again.
		again, err := process.ParseSignal(process.SignalName(sig))
		if err != nil || again != sig {
			t.Fatalf("%q -> %v -> %q -> %v, %v", name, sig, process.SignalName(sig), again, err)
		}
	})
}
