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
	const k1, k2 = "ed25519:AAAA", "ed25519:BBBB"
	for _, tt := range []struct {
		key, base string
		st        api.RelayStatus
		want      bool
	}{
		{"", "https://relay.example", api.RelayStatus{URLs: []string{"wss://relay.example/v1/attach"}}, true},
		{"", "https://relay.example:8443", api.RelayStatus{URL: "wss://relay.example:8443/v1/attach"}, true},
		{"", "https://relay.example", api.RelayStatus{URLs: []string{"wss://other.example/v1/attach"}}, false},
		{"", "https://relay.example", api.RelayStatus{}, false},
		// The key decides when both sides know it: a Space dialling the
		// relay through a proxy is this relay's; one on another relay
		// under the same host name is not.
		{k1, "https://relay.example", api.RelayStatus{URLs: []string{"wss://proxy.example"}, GrantKey: k1}, true},
		{k1, "https://relay.example", api.RelayStatus{URLs: []string{"wss://relay.example"}, GrantKey: k2}, false},
		{k1, "https://relay.example", api.RelayStatus{URLs: []string{"wss://relay.example"}}, true},
	} {
		if got := sameRelay(tt.key, tt.base, &tt.st); got != tt.want {
			t.Errorf("sameRelay(%s, %+v) = %v", tt.base, tt.st, got)
		}
	}
}
