package spacetools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
)

// Bounds of the background process tools.
const (
	// outputDefaultMaxBytes is what one space_process_output answers at
	// most unless asked otherwise: a screenful of log for a model, not a
	// build's whole output.
	outputDefaultMaxBytes = 64 << 10
	// outputMaxBytes bounds max_bytes: a larger answer costs a model more
	// than another call does.
	outputMaxBytes = 1 << 20
	// outputMaxWaitMS bounds wait_ms below the 60 s many MCP clients allow
	// a call by default, so that a long wait never looks like a dead bridge.
	outputMaxWaitMS = 30_000
	// processMaxTimeoutSeconds bounds a background process's timeout (a
	// week): longer-lived servers take no timeout at all.
	processMaxTimeoutSeconds = 7 * 24 * 60 * 60
	// signalExitWait is how long space_process_signal waits for a signal
	// that usually ends a process to end it, so that it can report the exit.
	signalExitWait = 2 * time.Second
)

// ptySize is the terminal of a process started with pty: the classic size
// programs assume when they cannot ask.
var ptySize = api.PTYSize{Cols: 80, Rows: 24}

// signalNames are the signals space_process_signal sends (the daemon's).
var signalNames = []string{"TERM", "INT", "HUP", "QUIT", "KILL", "USR1", "USR2", "STOP", "CONT"}

// endingSignals are those whose default action ends a process: after them
// the tool waits a little to report the exit.
var endingSignals = []string{"TERM", "INT", "HUP", "QUIT", "KILL"}

// ProcessOutput is the structured answer of space_process_output.
type ProcessOutput struct {
	ID string `json:"id"`
	// Stdout and Stderr are the new output (a PTY process has stdout only).
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// StdoutOffset and StderrOffset are where the next read starts: pass
	// them back as they are.
	StdoutOffset int64 `json:"stdout_offset"`
	StderrOffset int64 `json:"stderr_offset"`
	// LostStdoutBytes and LostStderrBytes count output the Space's buffer
	// dropped before it was read.
	LostStdoutBytes int64 `json:"lost_stdout_bytes,omitempty"`
	LostStderrBytes int64 `json:"lost_stderr_bytes,omitempty"`
	// More: max_bytes cut this answer short; call again at once.
	More     bool             `json:"more"`
	State    api.ProcessState `json:"state"`
	ExitCode *int             `json:"exit_code,omitempty"`
	Signal   string           `json:"signal,omitempty"`
	TimedOut bool             `json:"timed_out,omitempty"`
}

// ProcessList is the structured answer of space_processes.
type ProcessList struct {
	Processes []api.ProcessInfo `json:"processes"`
}

// ProcessInput is the structured answer of space_process_input.
type ProcessInput struct {
	ID          string `json:"id"`
	Bytes       int    `json:"bytes"`
	StdinClosed bool   `json:"stdin_closed"`
}

func processIDArg() *jsonschema.Schema {
	return NonEmpty("The process id space_process_start answered (or space_processes lists).")
}

func spaceProcessStartTool() *Tool {
	return &Tool{
		Name:   "space_process_start",
		Title:  "Start a background process",
		Hints:  mcpserve.Hints{Destructive: true, OpenWorld: true},
		Output: OutputOf[api.ProcessInfo](),
		Description: "Start a command in a Space in the background (a dev server, a watcher, a long build) and answer its id at once. " +
			"Read its output with space_process_output, type into it with space_process_input, stop it with space_process_signal. " +
			"It runs in its own process group and outlives this call and this MCP session; the Space remembers it (and its exit) for a while.",
		Schema: Object(nil, map[string]*jsonschema.Schema{
			"command": Str("Shell command line (/bin/sh -c); or argv."),
			"argv":    {Type: "array", Items: &jsonschema.Schema{Type: "string"}, Description: "Program and arguments, run without a shell; instead of command."},
			"cwd":     Str("Working directory in the Space (absolute); default the daemon's."),
			"env": {Type: "object", AdditionalProperties: &jsonschema.Schema{Type: "string"},
				Description: "Environment variables to set, on top of the daemon's."},
			"stdin": Boolean("Keep stdin open for space_process_input. Without it stdin reads as empty, as for `cmd &` in a script.", false),
			"pty": Boolean(fmt.Sprintf("Run on a %dx%d pseudo-terminal (for programs that want one; stdin is then open, and stderr comes with stdout).",
				ptySize.Cols, ptySize.Rows), false),
			"timeout": Integer("Seconds after which the process and its children are killed; 0 or absent: never.", 0, processMaxTimeoutSeconds, nil),
		}),
		Requires: []api.Feature{api.FeatureShell},
		Result:   "the process {id, pid, argv, state, ...}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				Command string            `json:"command"`
				Argv    []string          `json:"argv"`
				Cwd     string            `json:"cwd"`
				Env     map[string]string `json:"env"`
				Stdin   bool              `json:"stdin"`
				PTY     bool              `json:"pty"`
				Timeout int64             `json:"timeout"`
			}
			if err := Decode(c, "space_process_start", &a); err != nil {
				return nil, err
			}
			if (a.Command == "") == (len(a.Argv) == 0) {
				return nil, api.Errorf(api.KindInvalidArgument, "space_process_start: pass exactly one of command and argv")
			}
			req := api.StartRequest{
				Command: api.Command{Argv: a.Argv, Shell: a.Command, Cwd: a.Cwd, Env: a.Env, TimeoutMS: a.Timeout * 1000},
				Stdin:   a.Stdin,
			}
			if a.PTY {
				size := ptySize
				req.PTY = &size
			}
			info, err := c.Space.Client.Start(ctx, req)
			if err != nil {
				return nil, err
			}
			return &mcpserve.Result{
				Text:       fmt.Sprintf("started %s (pid %d); read its output with space_process_output id=%s", info.ID, info.PID, info.ID),
				Structured: info,
			}, nil
		},
	}
}

func spaceProcessOutputTool() *Tool {
	return &Tool{
		Name:   "space_process_output",
		Title:  "Read a background process's output",
		Hints:  mcpserve.Hints{ReadOnly: true},
		Output: OutputOf[ProcessOutput](),
		Description: "Read what a background process wrote since the given offsets, stdout and stderr apart, and the offsets to pass next time: " +
			"reads from the offsets each answer gives repeat and skip nothing. Start at 0 and 0. " +
			"With wait_ms, when there is nothing new it waits that long for output or the exit. " +
			"Says how many bytes were lost when the Space's output buffer overflowed before they were read, and the exit status once the process ended.",
		Schema: Object([]string{"id"}, map[string]*jsonschema.Schema{
			"id":            processIDArg(),
			"stdout_offset": Integer("Where to read stdout from: 0, or stdout_offset of the last answer.", 0, 0, 0),
			"stderr_offset": Integer("Where to read stderr from: 0, or stderr_offset of the last answer.", 0, 0, 0),
			"max_bytes": Integer(fmt.Sprintf("At most this many bytes of output, both streams together (%d-%d: at least one whole character); more says there is more.", utf8.UTFMax, outputMaxBytes),
				utf8.UTFMax, outputMaxBytes, outputDefaultMaxBytes),
			"wait_ms": Integer(fmt.Sprintf("When there is no new output, wait up to this many milliseconds (at most %d) for some, or for the exit.", outputMaxWaitMS),
				0, outputMaxWaitMS, 0),
		}),
		Requires: []api.Feature{api.FeatureShell},
		Errors:   []api.Kind{api.KindNotFound},
		Result:   "text: the new output, then a status line with the next offsets; structured {id, stdout, stderr, stdout_offset, stderr_offset, lost_*_bytes, more, state, exit_code, signal, timed_out}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			a := struct {
				ID           string `json:"id"`
				StdoutOffset int64  `json:"stdout_offset"`
				StderrOffset int64  `json:"stderr_offset"`
				MaxBytes     int64  `json:"max_bytes"`
				WaitMS       int64  `json:"wait_ms"`
			}{MaxBytes: outputDefaultMaxBytes}
			if err := Decode(c, "space_process_output", &a); err != nil {
				return nil, err
			}
			o, err := c.Space.Client.ReadOutput(ctx, a.ID, client.OutputRequest{
				StdoutOffset: a.StdoutOffset, StderrOffset: a.StderrOffset,
				MaxBytes: a.MaxBytes, Wait: time.Duration(a.WaitMS) * time.Millisecond,
			})
			if err != nil {
				return nil, err
			}
			out := processOutput(a.ID, o)
			return &mcpserve.Result{Text: formatOutput(out), Structured: out}, nil
		},
	}
}

// processOutput turns a read into the tool's answer. Output is text: a
// character the read cut in two is left for the next read (its offset
// stays before it), so that no read answers half a character, unless the
// process ended and the rest will never come; bytes that are not UTF-8
// become U+FFFD.
func processOutput(id string, o *client.Output) ProcessOutput {
	p := o.Process
	final := p.State == api.StateExited && !o.More
	stdout, outHeld := completeRunes(o.Stdout, final)
	stderr, errHeld := completeRunes(o.Stderr, final)
	return ProcessOutput{
		ID:     id,
		Stdout: strings.ToValidUTF8(string(stdout), "\uFFFD"), Stderr: strings.ToValidUTF8(string(stderr), "\uFFFD"),
		StdoutOffset: o.StdoutOffset - int64(outHeld), StderrOffset: o.StderrOffset - int64(errHeld),
		LostStdoutBytes: o.StdoutLost, LostStderrBytes: o.StderrLost,
		More:  o.More,
		State: p.State, ExitCode: p.ExitCode, Signal: p.Signal, TimedOut: p.TimedOut,
	}
}

// completeRunes splits off the start of a UTF-8 character that b ends in
// the middle of and answers how many bytes it held back; a final b (no
// more bytes will follow) is answered whole.
func completeRunes(b []byte, final bool) ([]byte, int) {
	if final {
		return b, 0
	}
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if !utf8.RuneStart(b[i]) {
			continue
		}
		if utf8.FullRune(b[i:]) {
			return b, 0
		}
		return b[:i], len(b) - i
	}
	return b, 0
}

// formatOutput is the text of space_process_output: the output, then one
// bracketed line of what happened and where to go on.
func formatOutput(o ProcessOutput) string {
	var b strings.Builder
	b.WriteString(o.Stdout)
	if o.Stderr != "" {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("[stderr]\n")
		b.WriteString(o.Stderr)
	}
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	if b.Len() == 0 {
		b.WriteString("[no new output]\n")
	}
	for _, l := range []struct {
		n      int64
		stream string
	}{{o.LostStdoutBytes, "stdout"}, {o.LostStderrBytes, "stderr"}} {
		if l.n > 0 {
			fmt.Fprintf(&b, "[%d bytes of %s were lost: the Space's output buffer overflowed before they were read]\n", l.n, l.stream)
		}
	}
	next := fmt.Sprintf("stdout_offset=%d stderr_offset=%d", o.StdoutOffset, o.StderrOffset)
	switch {
	case o.More:
		fmt.Fprintf(&b, "[more output: read again with %s]", next)
	case o.State == api.StateExited:
		fmt.Fprintf(&b, "[%s]", exitText(o.ExitCode, o.Signal, o.TimedOut))
	default:
		fmt.Fprintf(&b, "[running; next read: %s]", next)
	}
	return b.String()
}

// exitText says how a process ended.
func exitText(code *int, signal string, timedOut bool) string {
	s := "exited"
	if code != nil {
		s = fmt.Sprintf("exit %d", *code)
	}
	if signal != "" {
		s += ", signal " + signal
	}
	if timedOut {
		s += ", killed by its timeout"
	}
	return s
}

func spaceProcessInputTool() *Tool {
	return &Tool{
		Name:   "space_process_input",
		Title:  "Type into a background process",
		Hints:  mcpserve.Hints{Destructive: true},
		Output: OutputOf[ProcessInput](),
		Description: "Write text to the stdin of a background process started with stdin or pty (include \"\\n\" to end a line; on a PTY \"\\u0003\" is Ctrl-C). " +
			"close_stdin ends its input afterwards (EOF; ^D on a PTY).",
		Schema: Object([]string{"id"}, map[string]*jsonschema.Schema{
			"id":          processIDArg(),
			"text":        Str("What to write, as it is."),
			"close_stdin": Boolean("Close stdin after writing the text.", false),
		}),
		Requires: []api.Feature{api.FeatureShell},
		Errors:   []api.Kind{api.KindNotFound},
		Result:   "{id, bytes, stdin_closed}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				ID         string `json:"id"`
				Text       string `json:"text"`
				CloseStdin bool   `json:"close_stdin"`
			}
			if err := Decode(c, "space_process_input", &a); err != nil {
				return nil, err
			}
			if a.Text == "" && !a.CloseStdin {
				return nil, api.Errorf(api.KindInvalidArgument, "space_process_input: pass text, or close_stdin, or both")
			}
			res, err := c.Space.Client.WriteStdin(ctx, a.ID, []byte(a.Text), a.CloseStdin)
			if err != nil {
				return nil, err
			}
			text := fmt.Sprintf("wrote %d bytes to the stdin of %s", res.Bytes, a.ID)
			if a.CloseStdin {
				text += ", then closed it"
			}
			return &mcpserve.Result{Text: text, Structured: ProcessInput{ID: a.ID, Bytes: int(res.Bytes), StdinClosed: a.CloseStdin}}, nil
		},
	}
}

func spaceProcessSignalTool() *Tool {
	return &Tool{
		Name:   "space_process_signal",
		Title:  "Signal a background process",
		Hints:  mcpserve.Hints{Destructive: true},
		Output: OutputOf[api.ProcessInfo](),
		Description: "Send a signal to a background process and its whole process group (TERM asks it to stop, KILL forces it). " +
			fmt.Sprintf("After a signal that ends processes by default it waits up to %s for the exit, and answers the process with its exit status.", signalExitWait),
		Schema: Object([]string{"id"}, map[string]*jsonschema.Schema{
			"id":     processIDArg(),
			"signal": Enum("The signal.", "TERM", signalNames...),
		}),
		Requires: []api.Feature{api.FeatureShell},
		Errors:   []api.Kind{api.KindNotFound},
		Result:   "the process {id, pid, state, exit_code, signal, ...}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			a := struct {
				ID     string `json:"id"`
				Signal string `json:"signal"`
			}{Signal: "TERM"}
			if err := Decode(c, "space_process_signal", &a); err != nil {
				return nil, err
			}
			if err := c.Space.Client.Signal(ctx, a.ID, a.Signal); err != nil {
				return nil, err
			}
			var info *api.ProcessInfo
			var err error
			if slices.Contains(endingSignals, a.Signal) {
				info, err = waitExit(ctx, c.Space.Client, a.ID, signalExitWait)
			} else {
				info, err = c.Space.Client.Process(ctx, a.ID)
			}
			if err != nil {
				return nil, err
			}
			text := fmt.Sprintf("sent %s to %s; ", a.Signal, a.ID)
			if info.State == api.StateExited {
				text += "it ended: " + exitText(info.ExitCode, info.Signal, info.TimedOut)
			} else {
				text += "it is still running"
			}
			return &mcpserve.Result{Text: text, Structured: info}, nil
		},
	}
}

// waitExit waits up to wait for a process to end, following its output
// stream (no polling), and answers it as it then is.
func waitExit(ctx context.Context, c *client.Client, id string, wait time.Duration) (*api.ProcessInfo, error) {
	info, err := c.Process(ctx, id)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	req := client.OutputRequest{StdoutOffset: info.StdoutBytes, StderrOffset: info.StderrBytes}
	for info.State != api.StateExited {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		// Each read ends at new output or the exit; the output is not
		// wanted, only how far it went.
		req.Wait = left
		o, err := c.ReadOutput(ctx, id, req)
		if err != nil {
			return nil, err
		}
		info = &o.Process
		req.StdoutOffset, req.StderrOffset = o.StdoutOffset, o.StderrOffset
	}
	return info, nil
}

func spaceProcessesTool() *Tool {
	return &Tool{
		Name:        "space_processes",
		Title:       "List background processes",
		Hints:       mcpserve.Hints{ReadOnly: true},
		Output:      OutputOf[ProcessList](),
		Description: "List the background processes of a Space (started by space_process_start, cua-bridge exec or any client of the Space) with their state and exit status.",
		Schema:      Object(nil, map[string]*jsonschema.Schema{}),
		Requires:    []api.Feature{api.FeatureShell},
		Result:      "{processes: [{id, pid, argv, state, exit_code, signal, timed_out, started_at, stdout_bytes, stderr_bytes, ...}]}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			list, err := c.Space.Client.Processes(ctx)
			if err != nil {
				return nil, err
			}
			if list == nil {
				list = []api.ProcessInfo{}
			}
			var b strings.Builder
			for _, p := range list {
				state := "running"
				if p.State == api.StateExited {
					state = exitText(p.ExitCode, p.Signal, p.TimedOut)
				}
				fmt.Fprintf(&b, "%s\tpid %d\t%s\t%s\n", p.ID, p.PID, state, strings.Join(p.Argv, " "))
			}
			if len(list) == 0 {
				b.WriteString("no processes")
			}
			return &mcpserve.Result{Text: strings.TrimRight(b.String(), "\n"), Structured: ProcessList{Processes: list}}, nil
		},
	}
}
