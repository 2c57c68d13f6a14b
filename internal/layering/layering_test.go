package layering_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/internal/layering"
)

// Every package of the module, on each OS it builds for, keeps the rules.
func TestModuleKeepsTheRules(t *testing.T) {
	for _, b := range []struct{ goos, cgo string }{{"linux", "1"}, {"linux", "0"}, {"darwin", "0"}} {
		t.Run(b.goos+"-cgo"+b.cgo, func(t *testing.T) {
			pkgs, std := list(t, b.goos, b.cgo)
			for _, v := range layering.Check(pkgs, layering.Rules, std) {
				t.Error(v)
			}
			// A rule whose From names no package is a rule that checks
			// nothing: a typo, or a folder that moved. The relay's are for
			// the program that comes next.
			for _, r := range layering.Rules {
				if strings.HasPrefix(r.From, "relay") {
					continue
				}
				if !namesAPackage(r.From, pkgs) {
					t.Errorf("the rule for %s matches no package of the module", r.From)
				}
			}
		})
	}
}

// The checker sees a wrong import: each of these breaks one rule.
func TestWrongImportsAreFound(t *testing.T) {
	m := func(p string) string { return layering.Module + "/" + p }
	std := func(p string) bool { return !strings.Contains(strings.Split(p, "/")[0], ".") }
	cases := []struct {
		pkg, imp string
	}{
		{"api", "github.com/gorilla/websocket"},
		{"api", m("internal/loopback")},
		{"api/client", m("capabilities/files")},
		{"capabilities/files", m("spacesd/server")},
		{"capabilities/desktop", m("api/client")},
		{"media/rtc", m("mcp/mcpserve")},
		{"media/rtc", m("relay/protocol")},
		{"mcp/spacetools", m("bridge/registry")},
		{"internal/cgroup", m("capabilities/process")},
		{"internal/loopback", m("api/client")},
		{"spacesd/server", m("bridge/tools")},
		{"spacesd/server", m("relay/store")},
		{"spacesd/server", m("relay/turnsvc")},
		{"bridge/registry", m("relay/turnsvc")},
		{"relay/turnsvc", m("relay/store")},
		{"relay/turnsvc", m("relay/relayd")},
		{"relay/turnsvc", "github.com/gorilla/websocket"},
		{"bridge/tools", m("spacesd/server")},
		{"relay", m("spacesd/server")},
		{"spacesd/httpapi", m("capabilities/files")},
		{"spacesd/server", m("media/vp8")},
		{"relay/protocol", m("relay/store")},
		{"relay/protocol", m("mcp/mcpclient")},
	}
	for _, c := range cases {
		got := layering.Check([]layering.Package{{ImportPath: m(c.pkg), Imports: []string{c.imp}}}, layering.Rules, std)
		if len(got) == 0 {
			t.Errorf("%s importing %s passed the rules", c.pkg, c.imp)
		}
	}
	// And what the rules allow passes.
	fine := []struct{ pkg, imp string }{
		{"api", "net/url"},
		{"api/client", "github.com/gorilla/websocket"},
		{"capabilities/desktop", m("media/jpegenc")},
		{"mcp/spacetools", m("api/client")},
		{"spacesd/mcpsvc", m("mcp/mcpserve")},
		{"spacesd/relayattach", m("relay/protocol")},
		{"bridge/registry", m("relay/protocol")},
		{"relay", m("relay/protocol")},
		{"relay/protocol", m("api")},
		{"relay/relayd", m("relay/turnsvc")},
		{"relay/turnsvc", m("relay/protocol")},
		{"relay/turnsvc", "github.com/pion/turn/v5"},
	}
	for _, c := range fine {
		if got := layering.Check([]layering.Package{{ImportPath: m(c.pkg), Imports: []string{c.imp}}}, layering.Rules, std); len(got) != 0 {
			t.Errorf("%s importing %s broke a rule: %v", c.pkg, c.imp, got)
		}
	}
}

func namesAPackage(pattern string, pkgs []layering.Package) bool {
	base, tree := strings.CutSuffix(pattern, "/...")
	for _, p := range pkgs {
		rel := strings.TrimPrefix(p.ImportPath, layering.Module+"/")
		if rel == base || (tree && strings.HasPrefix(rel, base+"/")) {
			return true
		}
	}
	return false
}

// list answers every package of the module as go list sees it for goos,
// with or without cgo (test files left out: a test may start a real daemon), and a test of
// standard-library paths.
func list(t *testing.T, goos, cgo string) ([]layering.Package, func(string) bool) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-e", "-deps", "-json=ImportPath,Imports,Standard", "./...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED="+cgo, "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []layering.Package
	standard := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p layering.Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Standard {
			standard[p.ImportPath] = true
			continue
		}
		if strings.HasPrefix(p.ImportPath, layering.Module) {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found only %d packages of the module", len(pkgs))
	}
	return pkgs, func(path string) bool { return standard[path] || path == "C" || path == "unsafe" }
}
