package main

import (
	"bytes"
	"strings"
	"testing"
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
