package api_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
)

var relayComputerURLs = []struct {
	url  string
	want bool
}{
	{"https://relay.example/c/box", true},
	{"https://relay.example/c/box/", true},
	{"https://relay.example:8443/c/my-box", true},
	{"http://127.0.0.1:4000/c/box", true},
	{"http://127.0.0.1:3211", false},
	{"http://127.0.0.1:3211/", false},
	{"https://relay.example/c/", false},
	{"https://relay.example/c", false},
	{"https://relay.example/c/box/v1", false},
	{"https://relay.example/x/c/box", false},
	{"https://relay.example/cc/box", false},
	{"https://c/box", false},
	{"://bad", false},
}

// IsRelayComputerURL tells the base URL of a relay:<computer> (what the
// bridge's registry gives it) from a Space's own address.
func TestIsRelayComputerURL(t *testing.T) {
	for _, c := range relayComputerURLs {
		if got := api.IsRelayComputerURL(c.url); got != c.want {
			t.Errorf("IsRelayComputerURL(%q) = %v, want %v", c.url, got, c.want)
		}
	}
}

// FuzzIsRelayComputerURL: no input panics, and a URL it takes has a path
// of the prefix and one name.
func FuzzIsRelayComputerURL(f *testing.F) {
	for _, c := range relayComputerURLs {
		f.Add(c.url)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !api.IsRelayComputerURL(s) {
			return
		}
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("%q taken but does not parse: %v", s, err)
		}
		rest := strings.TrimPrefix(strings.TrimRight(u.Path, "/"), api.PrefixRelayComputer)
		if !strings.HasPrefix(u.Path, api.PrefixRelayComputer) || rest == "" || strings.Contains(rest, "/") {
			t.Fatalf("%q taken with path %q", s, u.Path)
		}
	})
}
