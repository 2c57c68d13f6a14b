package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/internal/cgroup"
)

func TestListenAddr(t *testing.T) {
	tests := []struct {
		listen   string
		hasToken bool
		want     string
		wantErr  bool
	}{
		{"", false, "127.0.0.1:3211", false},
		{"", true, "0.0.0.0:3211", false},
		{"127.0.0.1:4000", false, "127.0.0.1:4000", false},
		{"[::1]:4000", false, "[::1]:4000", false},
		{"localhost:4000", false, "127.0.0.1:4000", false},
		{"0.0.0.0:4000", false, "", true},
		{":4000", false, "", true},
		{"10.1.2.3:4000", false, "", true},
		{"example.com:4000", false, "", true},
		{"0.0.0.0:4000", true, "0.0.0.0:4000", false},
		{"no-port", true, "", true},
	}
	for _, tt := range tests {
		got, err := listenAddr(tt.listen, tt.hasToken)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("listenAddr(%q, token=%v) = %q, %v; want %q, err=%v", tt.listen, tt.hasToken, got, err, tt.want, tt.wantErr)
		}
	}
}

// The real serve command refuses a non-loopback bind without a token
// before it opens any socket.
func TestServeRefusesOpenNonLoopbackBind(t *testing.T) {
	t.Setenv(tokenEnv, "")
	var stderr bytes.Buffer
	code := run([]string{"serve", "--listen", "0.0.0.0:0"}, &stderr, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "without a token") {
		t.Fatalf("serve on 0.0.0.0 without token: exit %d, %q", code, stderr.String())
	}
}

func TestTokenGivenOnce(t *testing.T) {
	if _, err := buildAuth("a", "", "b", nil); err == nil {
		t.Fatal("two token sources accepted")
	}
}

// Containment flags with a bad value are refused before anything starts.
func TestServeRefusesBadContainmentFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--containment", "sometimes"},
		{"--process-pids-max", "0"},
		{"--process-pids-max", "-5"},
		{"--children-pids-max", "lots"},
		{"--process-memory-max", "4X"},
		{"--children-memory-max", "0"},
	} {
		var stderr bytes.Buffer
		if code := run(append([]string{"serve"}, args...), &stderr, &stderr); code != 2 {
			t.Errorf("serve %v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
}

func TestLimitFlags(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{{"64", 64, true}, {"max", -1, true}, {" MAX ", -1, true}, {"0", 0, false}, {"-1", 0, false}, {"1e3", 0, false}} {
		var got int64
		err := limitFlag(&got, parseCount)(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("pids flag %q = %d, %v", tc.in, got, err)
		}
	}
	var mem int64
	if err := limitFlag(&mem, cgroup.ParseSize)("2G"); err != nil || mem != 2<<30 {
		t.Errorf("memory flag 2G = %d, %v", mem, err)
	}
}

// Relay flags that do not go together are refused before anything starts.
func TestServeRefusesBadRelayFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--relay", "wss://relay.example"},
		{"--relay-token-file", "/tmp/tok"},
		{"--relay-fingerprint", "sha256:00"},
		{"--relay-ca", "/tmp/ca.pem"},
	} {
		var stderr bytes.Buffer
		if code := run(append([]string{"serve"}, args...), &stderr, &stderr); code != 2 || !strings.Contains(stderr.String(), "relay") {
			t.Errorf("serve %v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
}
