package relayreg

import (
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

func TestDefaultName(t *testing.T) {
	for in, want := range map[string]string{
		"dev":                   "dev",
		"direct:127.0.0.1:3211": "127.0.0.1-3211",
		"direct:[::1]:3211":     "--1-3211",
	} {
		got := defaultName(registry.Entry{Name: in})
		if got != want {
			t.Errorf("defaultName(%s) = %s, want %s", in, got, want)
		}
	}
	// An IPv6 address makes no computer name: the caller passes one.
	if protocol.CheckComputerName(defaultName(registry.Entry{Name: "direct:[::1]:3211"})) == nil {
		t.Error("a name starting with '-' passed CheckComputerName")
	}
}

func TestSameRelay(t *testing.T) {
	for _, tt := range []struct {
		base string
		st   api.RelayStatus
		want bool
	}{
		{"https://relay.example", api.RelayStatus{URLs: []string{"wss://relay.example/v1/attach"}}, true},
		{"https://relay.example:8443", api.RelayStatus{URL: "wss://relay.example:8443/v1/attach"}, true},
		{"https://relay.example", api.RelayStatus{URLs: []string{"wss://other.example/v1/attach"}}, false},
		{"https://relay.example", api.RelayStatus{}, false},
	} {
		if got := sameRelay(tt.base, &tt.st); got != tt.want {
			t.Errorf("sameRelay(%s, %+v) = %v", tt.base, tt.st, got)
		}
	}
}
