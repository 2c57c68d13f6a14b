package registry_test

import (
	"testing"

	"github.com/trycua/cua-spacesd/bridge/registry"
)

// The share-attached marks survive a reopen, are per relay and computer
// (the relay's URL compared without case or a trailing slash), and go
// when forgotten.
func TestShareAttachedMarks(t *testing.T) {
	home := t.TempDir()
	reg, err := registry.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	a := registry.SharedAttach{Relay: "https://relay.example:8443", Computer: "box", Space: "dev"}
	if err := reg.MarkShareAttached(a); err != nil {
		t.Fatal(err)
	}
	if err := reg.MarkShareAttached(registry.SharedAttach{Relay: a.Relay, Computer: "other", Space: "o"}); err != nil {
		t.Fatal(err)
	}
	again, err := registry.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		relay, computer string
		want            bool
	}{
		{"https://relay.example:8443", "box", true},
		{"HTTPS://Relay.Example:8443/", "box", true},
		{"https://relay.example:8443", "Box", false},
		{"https://elsewhere:8443", "box", false},
	}
	for _, c := range cases {
		got, ok, err := again.ShareAttached(c.relay, c.computer)
		if err != nil || ok != c.want || (ok && got != a) {
			t.Errorf("ShareAttached(%q, %q) = %+v, %v, %v; want %v", c.relay, c.computer, got, ok, err, c.want)
		}
	}
	if err := again.ForgetShareAttached(a.Relay, "box"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := reg.ShareAttached(a.Relay, "box"); ok {
		t.Error("a forgotten mark is still there")
	}
	if _, ok, _ := reg.ShareAttached(a.Relay, "other"); !ok {
		t.Error("forgetting one mark dropped another")
	}
}
