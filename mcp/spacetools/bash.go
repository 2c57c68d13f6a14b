package spacetools

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
)

// Bounds of space_bash.
const (
	bashDefaultTimeout = 60 * time.Second
	// bashMaxTimeout matches the longest call a client is expected to wait
	// for (900 s), with room to spare for builds.
	bashMaxTimeoutSeconds = 24 * 60 * 60
	// timeoutTailBytes is how much output a timeout error quotes.
	timeoutTailBytes = 2048
)

// BashResult is the structured answer of space_bash.
type BashResult struct {
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	ExitCode  int    `json:"exit_code"`
	TimedOut  bool   `json:"timed_out"`
	Truncated bool   `json:"truncated"`
	// ProcessID is set when background children of the command (`app &`)
	// live on after it: space_processes lists them under this id and
	// space_process_signal stops them. Background holds their pids.
	ProcessID  string `json:"process_id,omitempty"`
	Background []int  `json:"background,omitempty"`
}

func spaceBashTool() *Tool {
	return &Tool{
		Name:   "space_bash",
		Title:  "Run a shell command",
		Hints:  mcpserve.Hints{Destructive: true, OpenWorld: true},
		Output: OutputOf[BashResult](),
		Description: "Run a shell command (/bin/sh -c) in a Space and wait for it. Answers stdout, then stderr and the exit code. " +
			"A command past its timeout is killed with its whole process tree; cancelling the call kills it too. " +
			"Background children it leaves running (`app &`) live on, named by a process id for space_processes and space_process_signal; " +
			"to start and watch a long-running program, space_process_start is made for it.",
		Schema: Object([]string{"command"}, map[string]*jsonschema.Schema{
			"command": NonEmpty("The shell command line."),
			"timeout": Integer("Seconds before the command and its children are killed.", 1, bashMaxTimeoutSeconds, int(bashDefaultTimeout/time.Second)),
			"cwd":     Str("Working directory in the Space (absolute); default the daemon's."),
		}),
		Requires: []api.Feature{api.FeatureShell},
		Errors:   []api.Kind{api.KindTimeout},
		Result:   "text: stdout, then [stderr] and stderr, then [exit N]; structured {stdout, stderr, exit_code, timed_out, truncated, process_id?, background?}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				Command string
				Timeout int64
				Cwd     string
			}
			if err := Decode(c, "space_bash", &a); err != nil {
				return nil, err
			}
			timeout := bashDefaultTimeout
			if a.Timeout > 0 {
				timeout = time.Duration(a.Timeout) * time.Second
			}
			// One round trip: the daemon runs the command in its own process
			// group and kills the group when this request is cancelled, so
			// ctx (cancelled by notifications/cancelled) stops the work.
			res, err := c.Space.Client.Exec(ctx, api.ExecRequest{Command: api.Command{
				Shell: a.Command, Cwd: a.Cwd, TimeoutMS: timeout.Milliseconds(),
			}})
			if err != nil {
				return nil, err
			}
			if res.TimedOut {
				return nil, api.Errorf(api.KindTimeout, "space_bash: command timed out after %s and was killed with its process tree; output so far:\n%s",
					timeout, tail(res.Stdout+res.Stderr, timeoutTailBytes))
			}
			return &mcpserve.Result{Text: formatBash(res), Structured: BashResult{
				Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode, TimedOut: res.TimedOut, Truncated: res.Truncated(),
				ProcessID: res.ProcessID, Background: res.Descendants,
			}}, nil
		},
	}
}

func formatBash(r *api.ExecResult) string {
	var b strings.Builder
	b.WriteString(r.Stdout)
	if r.Stderr != "" {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("[stderr]\n")
		b.WriteString(r.Stderr)
	}
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	if r.Truncated() {
		b.WriteString("[output truncated]\n")
	}
	if r.Signal != "" {
		fmt.Fprintf(&b, "[exit %d, signal %s]", r.ExitCode, r.Signal)
	} else {
		fmt.Fprintf(&b, "[exit %d]", r.ExitCode)
	}
	if r.ProcessID != "" {
		what := fmt.Sprintf("%d processes", len(r.Descendants))
		if len(r.Descendants) == 1 {
			what = "1 process"
		}
		fmt.Fprintf(&b, "\n[background: %s left running (pids %s), process %s: space_process_signal stops them]",
			what, joinInts(r.Descendants), r.ProcessID)
	}
	return b.String()
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, " ")
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
