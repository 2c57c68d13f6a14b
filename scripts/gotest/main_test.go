package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Run on a real go test of a fixture module: the output is plain go
// test's (a failing test's messages, never a passing test's logs), the
// skipped tests are listed by reason at the end, and the exit status is go
// test's.
func TestRendersAndSummarisesSkips(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gotest")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name     string
		fail     bool
		wantExit int
		want     []string
		dontWant []string
	}{
		{"passing", false, 0,
			[]string{"ok  \tfixture", "2 tests were skipped", "frobnicator is not installed (2 tests)", "fixture: TestNeedsFrobA TestNeedsFrobB"},
			[]string{"passing-log-line", "=== RUN", "--- SKIP", "PASS\n"}},
		{"failing", true, 1,
			[]string{"--- FAIL: TestFails", "--- FAIL: TestFails/sub", "sub-failure-message", "FAIL\tfixture", "2 tests were skipped"},
			[]string{"passing-log-line", "=== RUN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "-count=1", "./...")
			cmd.Dir = filepath.Join("testdata", "fixture")
			cmd.Env = append(os.Environ(), "GOFLAGS=", "FIXTURE_FAIL=")
			if tc.fail {
				cmd.Env = append(cmd.Env, "FIXTURE_FAIL=1")
			}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			exit := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				exit = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			got := out.String()
			if exit != tc.wantExit {
				t.Errorf("exit %d, want %d", exit, tc.wantExit)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, w := range tc.dontWant {
				if strings.Contains(got, w) {
					t.Errorf("output has %q", w)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", got)
			}
			// The parent's result comes before its subtest's.
			if tc.fail && strings.Index(got, "--- FAIL: TestFails ") > strings.Index(got, "--- FAIL: TestFails/sub") {
				t.Errorf("the subtest's result printed before its parent's:\n%s", got)
			}
		})
	}
}

// Whatever go test writes, the renderer neither panics nor loses a line
// that is not an event.
func FuzzRender(f *testing.F) {
	f.Add([]byte(`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}` + "\n" +
		`{"Action":"skip","Package":"p","Test":"TestA"}` + "\nnot json\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		r := newRenderer(&out)
		_ = r.read(bytes.NewReader(data))
		r.summary()
		if len(data) > 60<<10 {
			return // a line past the scanner's buffer ends the read, by design
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSuffix(line, "\r") // bufio.ScanLines drops it
			if !strings.HasPrefix(strings.TrimSpace(line), "{") && strings.TrimSpace(line) != "" &&
				!strings.Contains(out.String(), line) {
				t.Fatalf("line %q lost", line)
			}
		}
	})
}
