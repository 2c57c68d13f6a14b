// Command gotest runs go test and prints what go test prints, then which
// tests were skipped and why. A machine without Xvfb skips the desktop
// tests, and go test's bare "ok" for their package hides it; make test runs
// through this so that the last lines say it.
//
//	go run ./scripts/gotest [go test flags] [packages]
//
// It runs go test -json (the go command is $GO, default go), renders the
// events as plain go test would (the output of failing tests, one line per
// package), and exits with go test's status.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
)

func main() {
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	cmd := exec.Command(goTool, append([]string{"test", "-json"}, os.Args[1:]...)...)
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fail(err)
	}
	// Ctrl-C reaches go test through the terminal; this process stays to
	// print what ran (a caught signal, unlike an ignored one, is not
	// inherited as ignored by go test).
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	r := newRenderer(os.Stdout)
	if err := r.read(out); err != nil {
		fmt.Fprintf(os.Stderr, "gotest: reading go test's events: %v\n", err)
	}
	err = cmd.Wait()
	r.summary()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "gotest: %v\n", err)
	os.Exit(1)
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output events name the package here
}

type testKey struct{ pkg, test string }

// renderer turns events into plain go test output and remembers the skips.
type renderer struct {
	w io.Writer
	// output holds each running test's lines until it ends: a failing
	// test's are printed, a passing test's dropped, as go test does.
	output map[testKey][]string
	// failed holds the blocks of failed subtests until their top-level test
	// ends, so that a parent's result prints before its subtests', as in
	// plain go test.
	failed map[testKey][]string
	skips  []skip
}

type skip struct{ pkg, test, reason string }

func newRenderer(w io.Writer) *renderer {
	return &renderer{w: w, output: map[testKey][]string{}, failed: map[testKey][]string{}}
}

func (r *renderer) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(r.w, sc.Text()) // not an event: pass it on
			continue
		}
		r.handle(e)
	}
	r.flush()
	return sc.Err()
}

// flush prints what tests that never ended wrote (a crash or a timeout
// mid-test: their last lines are the ones that matter) and the failed
// subtests of a parent that never ended.
func (r *renderer) flush() {
	byName := func(a, b testKey) int { return cmp.Or(cmp.Compare(a.pkg, b.pkg), cmp.Compare(a.test, b.test)) }
	for _, k := range slices.SortedFunc(maps.Keys(r.output), byName) {
		fmt.Fprint(r.w, strings.Join(result(r.output[k]), ""))
		delete(r.output, k)
	}
	for _, k := range slices.SortedFunc(maps.Keys(r.failed), byName) {
		fmt.Fprint(r.w, strings.Join(r.failed[k], "")) // ordered already
		delete(r.failed, k)
	}
}

func (r *renderer) handle(e event) {
	k := testKey{e.Package, e.Test}
	switch {
	case e.Action == "build-output":
		fmt.Fprint(r.w, e.Output)
	case e.Test == "" && e.Action == "output":
		// The package's own lines: its result ("ok", "FAIL", "?") and what
		// ran outside any test (TestMain, a leak check). A bare PASS is
		// what plain go test leaves out.
		if e.Output != "PASS\n" {
			fmt.Fprint(r.w, e.Output)
		}
	case e.Test == "":
	case e.Action == "output":
		r.output[k] = append(r.output[k], e.Output)
	case e.Action == "pass":
		delete(r.output, k)
	case e.Action == "skip":
		r.skips = append(r.skips, skip{e.Package, e.Test, skipReason(r.output[k])})
		delete(r.output, k)
	case e.Action == "fail":
		block := result(r.output[k])
		delete(r.output, k)
		top, _, sub := strings.Cut(e.Test, "/")
		topKey := testKey{e.Package, top}
		if sub {
			r.failed[topKey] = append(r.failed[topKey], block...)
			return
		}
		fmt.Fprint(r.w, strings.Join(block, ""))
		fmt.Fprint(r.w, strings.Join(r.failed[topKey], ""))
		delete(r.failed, topKey)
	}
}

// result orders a failed test's lines as plain go test prints them: its
// "--- FAIL" line, then what it logged; the "=== RUN" markers of -json's
// streaming are left out.
func result(lines []string) []string {
	var head, body []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "=== "):
		case strings.HasPrefix(t, "--- "):
			head = append(head, l)
		default:
			body = append(body, l)
		}
	}
	return append(head, body...)
}

// skipReason is what a skipped test said, without the file:line prefix
// (a helper's Skip is reported at each caller's line) and the SKIP line.
func skipReason(lines []string) string {
	var said []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		if file, rest, ok := strings.Cut(t, ": "); ok && strings.Contains(file, ".go:") {
			t = rest
		}
		said = append(said, t)
	}
	if len(said) == 0 {
		return "(no reason given)"
	}
	return strings.Join(said, " / ")
}

// summary prints the skipped tests grouped by reason, then by package.
func (r *renderer) summary() {
	if len(r.skips) == 0 {
		fmt.Fprintln(r.w, "gotest: no test was skipped")
		return
	}
	var reasons []string
	byReason := map[string]map[string][]string{} // reason -> package -> tests
	var pkgOrder = map[string][]string{}
	for _, s := range r.skips {
		if byReason[s.reason] == nil {
			byReason[s.reason] = map[string][]string{}
			reasons = append(reasons, s.reason)
		}
		if byReason[s.reason][s.pkg] == nil {
			pkgOrder[s.reason] = append(pkgOrder[s.reason], s.pkg)
		}
		byReason[s.reason][s.pkg] = append(byReason[s.reason][s.pkg], s.test)
	}
	fmt.Fprintf(r.w, "\ngotest: %d %s skipped (with CI=true, a missing component fails its tests instead):\n",
		len(r.skips), plural(len(r.skips), "test was", "tests were"))
	for _, reason := range reasons {
		n := 0
		for _, tests := range byReason[reason] {
			n += len(tests)
		}
		fmt.Fprintf(r.w, "  %s (%d %s)\n", reason, n, plural(n, "test", "tests"))
		for _, pkg := range pkgOrder[reason] {
			fmt.Fprintf(r.w, "      %s: %s\n", pkg, strings.Join(byReason[reason][pkg], " "))
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
