package server_test

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated regions of docs/api.md and docs/errors.md from the code")

// regenerate is the command that rewrites the generated regions.
const regenerate = "go test ./spacesd/server -run 'TestAPIDoc|TestErrorsDoc' -update-docs"

// A generated region of a document is the text between its markers;
// everything outside them is written by hand.
const endMarker = "<!-- end generated -->"

func beginMarker(name string) string {
	return "<!-- generated: " + name + " (" + regenerate + ") -->"
}

var anyBegin = regexp.MustCompile(`<!-- generated: ([a-z]+) `)

// checkRegions compares (or, with -update-docs, rewrites) the generated
// regions of the document at path: every region the document has must be
// one of want, and every one of want must be in it.
func checkRegions(t *testing.T, path string, want map[string]string) {
	t.Helper()
	path, _ = filepath.Abs(path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, m := range anyBegin.FindAllStringSubmatch(doc, -1) {
		if _, ok := want[m[1]]; !ok {
			t.Errorf("%s has a generated region %q that nothing generates", path, m[1])
		}
	}
	var stale []string
	for name, body := range want {
		begin := beginMarker(name)
		i := strings.Index(doc, begin)
		if i < 0 {
			t.Errorf("%s lacks the region %q: add the line %s, then a line %s, where it belongs", path, name, begin, endMarker)
			continue
		}
		j := strings.Index(doc[i:], endMarker)
		if j < 0 {
			t.Errorf("%s: the region %q has no %s", path, name, endMarker)
			continue
		}
		j += i
		region := begin + "\n\n" + body + "\n" + endMarker
		if doc[i:j+len(endMarker)] != region {
			stale = append(stale, name)
			doc = doc[:i] + region + doc[j+len(endMarker):]
		}
	}
	if len(stale) == 0 {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is out of date with the code in its generated regions %v; run: %s", path, stale, regenerate)
}

// TestAPIDoc holds the reference tables of docs/api.md to the code: the
// route table of a fully assembled daemon, the status of each error kind
// (httpapi), and the limits (api.Limits).
func TestAPIDoc(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	checkRegions(t, "../../docs/api.md", map[string]string{
		"routes":   routesTable(d.Server.RouteTable()),
		"statuses": statusTable(),
		"limits":   limitsTable(),
	})
}

// TestErrorsDoc holds docs/errors.md to api.Kinds and httpapi.
func TestErrorsDoc(t *testing.T) {
	checkRegions(t, "../../docs/errors.md", map[string]string{"kinds": kindsDoc()})
}

func code(s string) string { return "`" + s + "`" }

func routesTable(routes []server.Route) string {
	var b strings.Builder
	b.WriteString("| method | path | feature | body | auth | ticket | `Idempotency-Key` | roles |\n|---|---|---|---|---|---|---|---|\n")
	for _, rt := range routes {
		feature, body, ticket, idem := "—", "—", "—", ""
		if rt.Feature != "" {
			feature = code(string(rt.Feature))
		}
		if rt.Body != "" {
			body = code(rt.Body)
		}
		if rt.Ticket != "" {
			ticket = code(rt.Ticket)
		}
		if rt.Idempotent {
			idem = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s | %s | %s | %s |\n", rt.Method, rt.Path, feature, body, authOf(rt), ticket, idem, rolesOf(rt))
	}
	return b.String()
}

// rolesOf is who of a relay grant's roles may call rt (Route.Roles and
// the owner, who may call every route); a public route needs no one.
func rolesOf(rt server.Route) string {
	if rt.Public {
		return "anyone"
	}
	out := []string{code(string(server.RoleOwner))}
	for _, r := range rt.Roles {
		out = append(out, code(string(r)))
	}
	return strings.Join(out, ", ")
}

func authOf(rt server.Route) string {
	if rt.Public {
		return "public"
	}
	a := "token"
	if rt.APIKey {
		a += ", or as `" + server.HeaderAPIKey + "`"
	}
	if rt.InBandAuth {
		a += ", or in band"
	}
	return a
}

func status(code int) string {
	if code == httpapi.StatusClientClosedRequest {
		return "499 (client closed request)"
	}
	return fmt.Sprintf("%d %s", code, http.StatusText(code))
}

func statusTable() string {
	var b strings.Builder
	b.WriteString("| kind | status |\n|---|---|\n")
	for _, k := range api.Kinds() {
		if !k.ClientSide {
			fmt.Fprintf(&b, "| `%s` | %s |\n", k.Kind, status(httpapi.StatusFor(k.Kind)))
		}
	}
	b.WriteString("\nSharper statuses, for errors of a kind that HTTP has a better word for:\n\n| kind | when | status |\n|---|---|---|\n")
	for _, s := range httpapi.SharperStatuses() {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", s.Kind, s.When, status(s.Status))
	}
	return b.String()
}

func limitsTable() string {
	var b strings.Builder
	b.WriteString("| limit | meaning |\n|---|---|\n")
	for _, l := range api.LimitDocs() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", l.Name, l.Meaning)
	}
	return b.String()
}

func kindsDoc() string {
	var b strings.Builder
	for _, k := range api.Kinds() {
		fmt.Fprintf(&b, "### `%s`\n\n%s\n\n", k.Kind, k.Meaning)
		st := "none: made on the client's side, never in a daemon's HTTP answer"
		if !k.ClientSide {
			st = status(httpapi.StatusFor(k.Kind))
			for _, s := range httpapi.SharperStatuses() {
				if s.Kind == k.Kind {
					st += "; " + status(s.Status) + " for " + s.When
				}
			}
		}
		retry := "no"
		if api.RetryableByDefault(k.Kind) {
			retry = "yes"
		}
		if k.Retry != "" {
			retry += ": " + k.Retry
		}
		fmt.Fprintf(&b, "- **HTTP status:** %s\n- **Retryable:** %s\n- **Hint:** %s\n\n", st, retry, api.DefaultHint(k.Kind))
	}
	return strings.TrimSuffix(b.String(), "\n")
}
