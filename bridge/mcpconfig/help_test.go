package mcpconfig

import (
	"bytes"
	"flag"
	"regexp"
	"strings"
	"testing"
)

// TestHelpListsEveryFlag: `mcp-config --help` (stdout, exit 0) has one line
// per flag the command defines, with its value's name and its usage, and
// the usage lines at its top name every flag: a flag added later cannot go
// unlisted.
func TestHelpListsEveryFlag(t *testing.T) {
	d := Defaults{Listen: "127.0.0.1:3210", Path: "/mcp", TokenFileName: "bridge.token", Executable: "/bin/sh"}
	for _, arg := range []string{"--help", "-h", "-help"} {
		var stdout, stderr bytes.Buffer
		if code := Main([]string{arg}, d, &stdout, &stderr); code != exitOK || stderr.Len() > 0 {
			t.Fatalf("%s: code %d, stderr %q", arg, code, stderr.String())
		}
		help := stdout.String()
		fl, _ := newFlags(d)
		n := 0
		fl.VisitAll(func(f *flag.Flag) {
			n++
			arg, usage := flag.UnquoteUsage(f)
			if _, isBool := f.Value.(interface{ IsBoolFlag() bool }); isBool {
				arg = ""
			}
			head := strings.TrimSpace("--" + f.Name + " " + arg)
			var lines []string
			for _, l := range strings.Split(help, "\n") {
				if fields := strings.Fields(l); len(fields) > 0 && fields[0] == "--"+f.Name {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "  "+head+" ") || !strings.HasSuffix(lines[0], "  "+usage) {
				t.Errorf("--help has %q for --%s, want one line %q ... %q:\n%s", lines, f.Name, head, usage, help)
			}
			if !regexp.MustCompile(`[\s\[]--` + regexp.QuoteMeta(f.Name) + `[\s\]]`).MatchString(usageText) {
				t.Errorf("the usage lines do not name --%s:\n%s", f.Name, usageText)
			}
		})
		if n < 7 {
			t.Fatalf("only %d flags", n)
		}
	}
}
