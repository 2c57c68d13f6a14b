package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"golang.org/x/term"
)

// Limits of shell.
const (
	// shellInputChunk is the most one keystroke message carries; a paste
	// goes as several.
	shellInputChunk = 4 << 10
	// defaultCols and defaultRows are the PTY size when the local terminal
	// does not say its own.
	defaultCols, defaultRows = 80, 24
	// inputStopWait bounds the wait for the input reader at the end.
	inputStopWait = time.Second
	// defaultTerm is TERM in the Space when ours is unset.
	defaultTerm = "xterm-256color"
	// exitHangup is the exit code when this program is told to hang up
	// (SIGHUP/SIGTERM) while the shell runs: 128+SIGHUP, as a shell reports.
	exitHangup = 128 + int(syscall.SIGHUP)
)

// loginShell starts the Space user's own shell, falling back to bash, then sh.
const loginShell = `if [ -n "$SHELL" ] && [ -x "$SHELL" ]; then exec "$SHELL" -l; ` +
	`elif [ -x /bin/bash ]; then exec /bin/bash -l; else exec /bin/sh -l; fi`

const shellUsage = "shell SPACE [-- CMD [ARG...]]"

func (env Env) runShell(ctx context.Context, args []string) int {
	fs := env.newFlags("shell", shellUsage)
	pos, argv, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return ExitUsage
	}
	in, ok := isTerminal(env.Stdin)
	if !ok {
		return env.fail(ExitBridge, api.Errorf(api.KindInvalidArgument,
			"shell needs a terminal on stdin; run a command with: cua-bridge exec %s -- CMD", pos[0]))
	}
	c, _, err := env.client(pos[0])
	if err != nil {
		return env.fail(ExitBridge, err)
	}
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return env.fail(ExitBridge, err)
	}
	if err := caps.Require(api.FeatureShell, api.FeaturePTY); err != nil {
		return env.fail(ExitBridge, err)
	}
	fd, _ := fdOf(in)
	size := api.PTYSize{Cols: defaultCols, Rows: defaultRows}
	if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
		size = api.PTYSize{Cols: uint16(w), Rows: uint16(h)}
	}
	termName := os.Getenv("TERM")
	if termName == "" {
		termName = defaultTerm
	}
	cmd := api.Command{Shell: loginShell, Env: map[string]string{"TERM": termName}}
	if len(argv) > 0 {
		cmd = api.Command{Argv: argv, Env: cmd.Env}
	}
	info, err := c.Start(ctx, api.StartRequest{Command: cmd, PTY: &size, Stdin: true})
	if err != nil {
		return env.fail(ExitBridge, err)
	}
	stream, err := c.StreamProcess(ctx, info.ID, 0, 0)
	if err != nil {
		return env.fail(ExitBridge, err)
	}
	defer stream.Close()

	old, err := term.MakeRaw(fd)
	if err != nil {
		return env.fail(ExitBridge, api.Errorf(api.KindIO, "put the terminal in raw mode: %w", err))
	}
	// Restore before anything is printed after the session, and on every
	// way out: a terminal left raw is unusable.
	restore := sync.OnceFunc(func() { _ = term.Restore(fd, old) })
	defer restore()

	s := &shellSession{stream: stream, id: info.ID}
	inputDone := make(chan struct{})
	go func() {
		defer close(inputDone)
		s.copyInput(in)
	}()
	defer func() {
		// Wake the input reader: a pollable terminal honours the deadline;
		// on one that is not (a blocking stdin), the reader ends with the
		// program, so the wait is bounded.
		if in.SetReadDeadline(time.Now()) == nil {
			select {
			case <-inputDone:
			case <-time.After(inputStopWait):
			}
		}
	}()

	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP, syscall.SIGTERM)
	defer signal.Stop(hup)

	events := make(chan streamResult, 1)
	go func() {
		info, err := s.copyOutput(env.Stdout)
		events <- streamResult{info, err}
	}()

	hangup := func() int {
		// Like a terminal closing: the shell gets SIGHUP.
		s.send(api.StreamInput{Type: "signal", Signal: "HUP"})
		stream.Close()
		<-events
		restore()
		fmt.Fprintf(env.Stderr, "cua-bridge: hung up the shell in %s\n", pos[0])
		return exitHangup
	}
	for {
		select {
		case r := <-events:
			restore()
			if r.err != nil {
				return env.fail(ExitBridge, r.err)
			}
			return env.exitCode(r.info)
		case <-winch:
			if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
				s.send(api.StreamInput{Type: "resize", Size: &api.PTYSize{Cols: uint16(w), Rows: uint16(h)}})
			}
		case <-hup:
			return hangup()
		case <-ctx.Done():
			return hangup()
		}
	}
}

// shellSession is one PTY process's stream. Input, resizes and signals are
// written from several goroutines; the WebSocket takes one writer at a time.
type shellSession struct {
	stream *client.ProcessStream
	id     string
	mu     sync.Mutex
}

func (s *shellSession) send(in api.StreamInput) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A failed send means the stream is closing; the output side reports why.
	_ = s.stream.Send(in)
}

// copyInput sends keystrokes as they are typed (raw mode: every byte,
// including ^C and ^D, goes to the Space's terminal).
func (s *shellSession) copyInput(in io.Reader) {
	buf := make([]byte, shellInputChunk)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			s.send(api.StreamInput{Type: "stdin", Data: append([]byte(nil), buf[:n]...)})
		}
		if err != nil {
			return
		}
	}
}

// copyOutput writes the terminal's output until the process exits.
func (s *shellSession) copyOutput(out io.Writer) (*api.ProcessInfo, error) {
	for {
		ev, err := s.stream.Next()
		if err != nil {
			return nil, err
		}
		switch ev.Type {
		case "output":
			if _, err := out.Write(ev.Data); err != nil {
				return nil, api.Errorf(api.KindIO, "write terminal output: %w", err)
			}
		case "exit":
			if ev.Exit == nil {
				return nil, api.Errorf(api.KindJSON, "process %s: exit event without its status", s.id)
			}
			return ev.Exit, nil
		}
	}
}
