package compatsvc

import (
	"context"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// maxCommandTimeout bounds run_command's timeout parameter (a day): a
// command without one runs until it ends, as computer-server ran it, or
// until its client goes away.
const maxCommandTimeout = 24 * 60 * 60

type runCommandParams struct {
	Command string   `json:"command"`
	Timeout *float64 `json:"timeout"`
}

type runCommandResult struct {
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// ReturnCode is the exit status; a command killed by a signal has
	// minus the signal's number, as Python's subprocess reports it.
	ReturnCode      int  `json:"return_code"`
	StdoutTruncated bool `json:"stdout_truncated,omitempty"`
	StderrTruncated bool `json:"stderr_truncated,omitempty"`
}

// runCommand runs a shell command (/bin/sh -c) to its end through the
// process manager: in a cgroup of its own, its whole tree killed at the
// timeout or when the client goes away, each output capped at the
// daemon's limit (truncation is said in stdout_truncated and
// stderr_truncated).
func runCommand(ctx context.Context, c *conn, p runCommandParams) (any, error) {
	if strings.TrimSpace(p.Command) == "" {
		return nil, api.Errorf(api.KindInvalidArgument, "command is empty")
	}
	timeout, err := seconds("timeout", p.Timeout, 0, maxCommandTimeout)
	if err != nil {
		return nil, err
	}
	req := api.ExecRequest{Command: api.Command{Shell: p.Command, TimeoutMS: int64(timeout * 1000)}}
	if timeout > 0 && req.TimeoutMS == 0 {
		req.TimeoutMS = 1 // a timeout under a millisecond is still one
	}
	res, err := c.svc.procs.Exec(ctx, req)
	if err != nil {
		return nil, err
	}
	out := runCommandResult{Stdout: res.Stdout, Stderr: res.Stderr, ReturnCode: res.ExitCode,
		StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated}
	if res.Signal != "" && res.ExitCode > 128 {
		out.ReturnCode = -(res.ExitCode - 128)
	}
	if res.TimedOut {
		out.ReturnCode = -1
		return out, api.Errorf(api.KindTimeout, "Command timed out after %v; its whole process tree was killed", time.Duration(timeout*float64(time.Second)))
	}
	return out, nil
}
