package cli

import (
	"context"
	"fmt"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
)

const logsUsage = "logs [-f] SPACE ID"

// logsChunkBytes is how much output one read of logs asks for: the ring
// is read in pieces rather than held whole.
const logsChunkBytes = 1 << 20

// exitInterrupted is what logs -f answers when Ctrl-C ends the following
// (128 + SIGINT, as a shell reports it).
const exitInterrupted = 130

// runLogs prints what a background process wrote (stdout to stdout, stderr
// to stderr) from the start the Space still holds; with -f it follows the
// output until the process ends or Ctrl-C, reconnecting as exec does. The
// process itself is left alone either way.
func (env Env) runLogs(ctx context.Context, args []string) int {
	fs := env.newFlags("logs", logsUsage)
	follow := fs.Bool("f", false, "follow the output until the process ends (Ctrl-C stops following, not the process)")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 2 {
		fs.Usage()
		return ExitUsage
	}
	c, _, err := env.client(pos[0])
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	id := pos[1]
	if !*follow {
		return env.printLogs(ctx, c, id)
	}
	p := &remoteProcess{c: c, id: id, stdout: env.Stdout, stderr: env.Stderr}
	// Ctrl-C ends ctx: the stream closes, and readStream answers nothing.
	stop := make(chan struct{})
	defer context.AfterFunc(ctx, func() { close(stop) })()
	info, err := p.readStream(ctx, stop)
	switch {
	case ctx.Err() != nil:
		return exitInterrupted
	case err != nil:
		return env.fail(ExitFailure, err)
	}
	fmt.Fprintf(env.Stderr, "cua-bridge: process %s ended: %s\n", id, processState(*info))
	return ExitOK
}

// printLogs prints the output the Space holds now, in chunks.
func (env Env) printLogs(ctx context.Context, c *client.Client, id string) int {
	var req client.OutputRequest
	req.MaxBytes = logsChunkBytes
	for {
		o, err := c.ReadOutput(ctx, id, req)
		if err != nil {
			return env.fail(ExitFailure, err)
		}
		for _, l := range []struct {
			n      int64
			stream api.Stream
		}{{o.StdoutLost, api.StreamStdout}, {o.StderrLost, api.StreamStderr}} {
			if l.n > 0 {
				fmt.Fprintf(env.Stderr, "cua-bridge: %d bytes of %s were lost (the Space's output buffer overflowed)\n", l.n, l.stream)
			}
		}
		if _, err := env.Stdout.Write(o.Stdout); err != nil {
			return env.fail(ExitFailure, api.Errorf(api.KindIO, "logs: %w", err))
		}
		if _, err := env.Stderr.Write(o.Stderr); err != nil {
			return env.fail(ExitFailure, api.Errorf(api.KindIO, "logs: %w", err))
		}
		if !o.More {
			return ExitOK
		}
		req.StdoutOffset, req.StderrOffset = o.StdoutOffset, o.StderrOffset
	}
}
