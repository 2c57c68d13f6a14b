package server_test

import (
	"os"
	"regexp"
	"sort"
	"testing"

	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// docHeading matches the one way docs/api.md names a route: ### `METHOD /path`.
var docHeading = regexp.MustCompile("(?m)^### `([A-Z]+ /[^`]*)`")

// Every served route is documented in docs/api.md, and every documented
// route is served: the reference cannot drift from the route table.
func TestEveryRouteIsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range docHeading.FindAllStringSubmatch(string(b), -1) {
		documented[m[1]] = true
	}
	d := spacesdtest.Start(t, spacesdtest.Options{})
	served := map[string]bool{}
	var missing []string
	for _, rt := range d.Server.Routes() {
		served[rt] = true
		if !documented[rt] {
			missing = append(missing, rt)
		}
	}
	sort.Strings(missing)
	for _, rt := range missing {
		t.Errorf("route %s is served but docs/api.md has no \"### `%s`\" heading", rt, rt)
	}
	for rt := range documented {
		if !served[rt] {
			t.Errorf("docs/api.md documents %s, which is not served", rt)
		}
	}
}
