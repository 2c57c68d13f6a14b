package mcp_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
)

// ticker prints a numbered line every 200 ms and answers each line of its
// stdin with "got <line>".
const ticker = `(i=0; while :; do echo "tick $i"; i=$((i+1)); sleep 0.2; done) & while read l; do echo "got $l"; done`

// outputReader reads a process's output through space_process_output,
// each call from the offsets the last one answered.
type outputReader struct {
	id                     string
	stdoutOff, stderrOff   int64
	stdout, stderr         strings.Builder
	last                   spacetools.ProcessOutput
	maxBytes, calls, waits int
}

func (r *outputReader) read(t *testing.T, cs *sdk.ClientSession) spacetools.ProcessOutput {
	t.Helper()
	args := map[string]any{"space": "s1", "id": r.id, "stdout_offset": r.stdoutOff, "stderr_offset": r.stderrOff, "wait_ms": 5000}
	if r.maxBytes > 0 {
		args["max_bytes"] = r.maxBytes
	}
	res := call(t, cs, "space_process_output", args)
	if res.IsError {
		t.Fatalf("space_process_output: %s", text(res))
	}
	var o spacetools.ProcessOutput
	structured(t, res, &o)
	if o.StdoutOffset != r.stdoutOff+int64(len(o.Stdout))+o.LostStdoutBytes {
		t.Fatalf("read from %d answered %d bytes and next offset %d", r.stdoutOff, len(o.Stdout), o.StdoutOffset)
	}
	if !strings.Contains(text(res), fmt.Sprintf("stdout_offset=%d", o.StdoutOffset)) && o.State != api.StateExited {
		t.Fatalf("the text does not name the next offsets: %q", text(res))
	}
	r.stdout.WriteString(o.Stdout)
	r.stderr.WriteString(o.Stderr)
	r.stdoutOff, r.stderrOff, r.last = o.StdoutOffset, o.StderrOffset, o
	r.calls++
	return o
}

// until reads until the output so far satisfies cond.
func (r *outputReader) until(t *testing.T, cs *sdk.ClientSession, what string, cond func(string) bool) {
	t.Helper()
	for !cond(r.stdout.String()) {
		if o := r.read(t, cs); o.State == api.StateExited {
			if cond(r.stdout.String()) {
				return
			}
			t.Fatalf("the process ended before %s: %q", what, r.stdout.String())
		}
	}
}

var tickLine = regexp.MustCompile(`^tick (\d+)$`)

// ticks checks that the tick lines of out are 0, 1, 2, ... with none
// missing or repeated, and answers how many there are.
func ticks(t *testing.T, out string) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		m := tickLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if got, _ := strconv.Atoi(m[1]); got != n {
			t.Fatalf("tick %d where tick %d was due: a line was lost or repeated in\n%s", got, n, out)
		}
		n++
	}
	return n
}

// A background process read in several calls, typed into, living on after
// the MCP session that started it, and stopped with a signal.
func TestBackgroundProcess(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)

	res := call(t, cs, "space_process_start", map[string]any{"space": "s1", "command": ticker, "stdin": true})
	if res.IsError {
		t.Fatalf("start: %s", text(res))
	}
	var info api.ProcessInfo
	structured(t, res, &info)
	if info.ID == "" || info.PID == 0 || info.State != api.StateRunning || !strings.Contains(text(res), info.ID) {
		t.Fatalf("start answered %+v: %q", info, text(res))
	}
	t.Cleanup(func() { _ = e.daemon.Client.Signal(t.Context(), info.ID, "KILL") })

	r := &outputReader{id: info.ID}
	r.until(t, cs, "three ticks", func(out string) bool { return strings.Count(out, "tick ") >= 3 })
	if r.calls < 2 {
		// One more read from the offsets: the lines go on where they stopped.
		r.read(t, cs)
	}
	first := ticks(t, r.stdout.String())

	in := call(t, cs, "space_process_input", map[string]any{"space": "s1", "id": info.ID, "text": "hello\n"})
	if in.IsError {
		t.Fatalf("input: %s", text(in))
	}
	r.until(t, cs, "the echo", func(out string) bool { return strings.Contains(out, "got hello\n") })

	// The process belongs to the Space: a new session (as after a client
	// restart) finds it running and reads on from the same offsets.
	cs.Close()
	cs = e.client(t, nil)
	var list spacetools.ProcessList
	structured(t, call(t, cs, "space_processes", map[string]any{"space": "s1"}), &list)
	found := false
	for _, p := range list.Processes {
		if p.ID == info.ID {
			found = p.State == api.StateRunning
		}
	}
	if !found {
		t.Fatalf("after the session ended, space_processes lists %+v", list)
	}
	r.until(t, cs, "more ticks", func(out string) bool { return ticks(t, out) >= first+2 })

	sig := call(t, cs, "space_process_signal", map[string]any{"space": "s1", "id": info.ID, "signal": "TERM"})
	if sig.IsError {
		t.Fatalf("signal: %s", text(sig))
	}
	var ended api.ProcessInfo
	structured(t, sig, &ended)
	if ended.State != api.StateExited || ended.Signal == "" || !strings.Contains(text(sig), "signal") {
		t.Fatalf("after TERM: %+v, %q", ended, text(sig))
	}
	// The rest of the output, then the exit, through the same offsets.
	for r.last.State != api.StateExited {
		r.read(t, cs)
	}
	if r.last.Signal != ended.Signal || !strings.Contains(r.stdout.String(), "got hello\n") {
		t.Fatalf("last read %+v", r.last)
	}
	ticks(t, r.stdout.String())
}

// Small reads (max_bytes) of multi-byte text never answer half a character
// and lose nothing; a PTY process is typed into like a terminal.
func TestProcessOutputText(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	const line = "Привет ✓ héllo"
	var info api.ProcessInfo
	structured(t, call(t, cs, "space_process_start", map[string]any{
		"space": "s1", "argv": []string{"/bin/sh", "-c", `for i in 1 2 3; do printf '%s\n' "$L"; printf 'e%s\n' "$i" >&2; done`},
		"env": map[string]any{"L": line},
	}), &info)
	r := &outputReader{id: info.ID, maxBytes: 5}
	for r.last.State != api.StateExited || r.last.More {
		o := r.read(t, cs)
		if strings.ContainsRune(o.Stdout, '\uFFFD') {
			t.Fatalf("a read answered a broken character: %q", o.Stdout)
		}
	}
	if want := strings.Repeat(line+"\n", 3); r.stdout.String() != want || r.stderr.String() != "e1\ne2\ne3\n" {
		t.Fatalf("read stdout %q stderr %q", r.stdout.String(), r.stderr.String())
	}
	if r.last.ExitCode == nil || *r.last.ExitCode != 0 {
		t.Fatalf("exit not reported: %+v", r.last)
	}

	res := call(t, cs, "space_process_start", map[string]any{"space": "s1", "command": `read l; echo "pty got $l"`, "pty": true})
	if res.IsError {
		t.Fatalf("start on a PTY: %s", text(res))
	}
	structured(t, res, &info)
	if !info.PTY {
		t.Fatalf("started %+v, not on a PTY", info)
	}
	if in := call(t, cs, "space_process_input", map[string]any{"space": "s1", "id": info.ID, "text": "x\n"}); in.IsError {
		t.Fatalf("input: %s", text(in))
	}
	pr := &outputReader{id: info.ID}
	pr.until(t, cs, "the PTY's answer", func(out string) bool { return strings.Contains(out, "pty got x") })
}

func TestProcessToolRefusals(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	var quiet api.ProcessInfo
	structured(t, call(t, cs, "space_process_start", map[string]any{"space": "s1", "command": "sleep 600"}), &quiet)
	t.Cleanup(func() { _ = e.daemon.Client.Signal(t.Context(), quiet.ID, "KILL") })

	for _, tc := range []struct {
		name    string
		tool    string
		args    map[string]any
		kind    api.Kind
		mention string
	}{
		{"both command and argv", "space_process_start", map[string]any{"command": "true", "argv": []string{"true"}}, api.KindInvalidArgument, "exactly one"},
		{"neither command nor argv", "space_process_start", map[string]any{}, api.KindInvalidArgument, "exactly one"},
		{"unknown process", "space_process_output", map[string]any{"id": "no-such-process"}, api.KindNotFound, "no-such-process"},
		{"offset past the output", "space_process_output", map[string]any{"id": quiet.ID, "stdout_offset": 5}, api.KindInvalidArgument, "stdout offset 5"},
		{"stdin of a process without one", "space_process_input", map[string]any{"id": quiet.ID, "text": "x"}, api.KindInvalidArgument, "without stdin"},
		{"input of nothing", "space_process_input", map[string]any{"id": quiet.ID}, api.KindInvalidArgument, "text"},
		{"signal to an unknown process", "space_process_signal", map[string]any{"id": "no-such-process"}, api.KindNotFound, "no-such-process"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.args["space"] = "s1"
			r := call(t, cs, tc.tool, tc.args)
			if k := errKind(t, r); k != string(tc.kind) || !strings.Contains(text(r), tc.mention) {
				t.Fatalf("%s %v: kind %s: %s", tc.tool, tc.args, k, text(r))
			}
		})
	}

	// A read of a quiet process with nothing new waits wait_ms and says so.
	res := call(t, cs, "space_process_output", map[string]any{"space": "s1", "id": quiet.ID, "wait_ms": 50})
	if res.IsError || !strings.Contains(text(res), "[no new output]") || !strings.Contains(text(res), "running") {
		t.Fatalf("quiet read: %s", text(res))
	}
	// STOP does not end it: the answer says it still runs, without waiting.
	res = call(t, cs, "space_process_signal", map[string]any{"space": "s1", "id": quiet.ID, "signal": "STOP"})
	var info api.ProcessInfo
	structured(t, res, &info)
	if res.IsError || info.State != api.StateRunning || !strings.Contains(text(res), "still running") {
		t.Fatalf("STOP: %s", text(res))
	}
}
