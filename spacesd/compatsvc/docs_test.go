package compatsvc

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docRow is a row of a command table in docs/computer-server.md: its
// first cell (the names) and its status.
var docRow = regexp.MustCompile("(?m)^\\| (`[^|]*) \\| (mapped|partial|refused|unknown command|not served[^|]*) \\|")

var docName = regexp.MustCompile("`([a-z_]+)`")

// Every command the bus serves (aliases too) has a row in
// docs/computer-server.md, and every row that says a command is served
// (mapped, partial, refused) names one the bus has; a row saying "unknown
// command" names none it has.
func TestEveryCommandIsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/computer-server.md")
	if err != nil {
		t.Fatal(err)
	}
	table := commandTable()
	documented := map[string]bool{}
	for _, m := range docRow.FindAllStringSubmatch(string(b), -1) {
		for _, n := range docName.FindAllStringSubmatch(m[1], -1) {
			name := n[1]
			documented[name] = true
			_, served := table[name]
			switch status := m[2]; {
			case status == "unknown command" && served:
				t.Errorf("docs say %s is an unknown command, but the bus serves it", name)
			case (status == "mapped" || status == "partial" || status == "refused") && !served:
				t.Errorf("docs say %s is %s, but the bus has no such command", name, status)
			case status == "refused" && table[name].alias == "" && !isRefused(table[name]):
				t.Errorf("docs say %s is refused, but the bus serves it", name)
			}
		}
	}
	if len(documented) < len(table) {
		t.Errorf("the doc's command tables name %d commands; the bus has %d", len(documented), len(table))
	}
	for name := range table {
		if !documented[name] {
			t.Errorf("the bus serves %s, which docs/computer-server.md has no row for", name)
		}
	}
}

// isRefused runs a command's bound call without a connection: only a
// refused one answers without touching it.
func isRefused(c command) (refused bool) {
	run, err := c.bind(nil)
	if err != nil {
		return false
	}
	defer func() {
		if recover() != nil {
			refused = false
		}
	}()
	_, err = run(context.Background(), nil)
	return err != nil && strings.Contains(err.Error(), "is not served by cua-spacesd")
}
