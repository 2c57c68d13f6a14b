package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"golang.org/x/sys/unix"
)

// Limits of exec.
const (
	// maxStreamReconnects bounds how often exec reopens a broken output
	// stream; the daemon's ring replays from the offsets it got to, so a
	// reconnect loses nothing.
	maxStreamReconnects = 5
	// reconnectBackoff is the pause before a reconnect.
	reconnectBackoff = 200 * time.Millisecond
	// killGrace is how long an interrupted exec waits for the command to
	// end after forwarding the signal, before it sends KILL.
	killGrace = 5 * time.Second
	// signalCallTimeout bounds one signal call to the daemon.
	signalCallTimeout = 5 * time.Second
	// stdinChunk is the size of one stdin write of exec -i.
	stdinChunk = 32 << 10
	// exitTimedOut is the exit code of a command its --timeout killed, as
	// timeout(1) answers.
	exitTimedOut = 124
)

const execUsage = "exec [-i] [--timeout D] [--cwd DIR] [--env K=V]... SPACE -- CMD [ARG...]"

// envFlags collects repeated --env K=V flags.
type envFlags map[string]string

func (e envFlags) String() string { return fmt.Sprint(map[string]string(e)) }
func (e envFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("--env %q: want KEY=VALUE", v)
	}
	e[k] = val
	return nil
}

func (env Env) runExec(ctx context.Context, args []string) int {
	fs := env.newFlags("exec", execUsage)
	interactive := fs.Bool("i", false, "copy this program's stdin to the command")
	timeout := fs.Duration("timeout", 0, "kill the command's whole process tree after this long (0 = never)")
	cwd := fs.String("cwd", "", "working directory in the Space")
	vars := envFlags{}
	fs.Var(vars, "env", "set an environment variable KEY=VALUE (repeatable)")
	pos, argv, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 || len(argv) == 0 {
		fs.Usage()
		return ExitUsage
	}
	c, _, err := env.client(pos[0])
	if err != nil {
		return env.fail(ExitBridge, err)
	}
	req := api.StartRequest{
		Command: api.Command{Argv: argv, Cwd: *cwd, TimeoutMS: timeout.Milliseconds()},
		Stdin:   *interactive,
	}
	if len(vars) > 0 {
		req.Env = vars
	}
	info, err := c.Start(ctx, req)
	if err != nil {
		return env.fail(ExitBridge, err)
	}
	p := &remoteProcess{c: c, id: info.ID, stdout: env.Stdout, stderr: env.Stderr}
	if *interactive {
		go p.copyStdin(ctx, env.Stdin, env.Stderr)
	}
	exit, err := p.follow(ctx)
	if err != nil {
		return env.fail(ExitBridge, err)
	}
	return env.exitCode(exit)
}

// exitCode turns how the remote process ended into this program's exit
// code: its own code, 128+N for a signal N (as a shell reports it), 124 for
// a timeout.
func (env Env) exitCode(info *api.ProcessInfo) int {
	switch {
	case info.TimedOut:
		fmt.Fprintf(env.Stderr, "cua-bridge: the command timed out; its process tree was killed\n")
		return exitTimedOut
	case info.Signal != "":
		name := strings.ToUpper(info.Signal)
		if !strings.HasPrefix(name, "SIG") {
			name = "SIG" + name
		}
		if n := unix.SignalNum(name); n != 0 {
			return 128 + int(n)
		}
		return ExitBridge
	case info.ExitCode != nil:
		return *info.ExitCode
	}
	return ExitBridge
}

// remoteProcess follows one detached process's output to completion.
type remoteProcess struct {
	c              *client.Client
	id             string
	stdout, stderr io.Writer
	// next is the offset of the next byte of each stream: where a
	// reconnect resumes.
	nextOut, nextErr int64
}

// follow copies the process's output as it comes until it exits, and
// returns how it ended. Interrupts (ctx done, or SIGINT/SIGTERM/SIGHUP to
// this program) are forwarded to the process, which keeps its chance to
// clean up; after killGrace it is killed.
func (p *remoteProcess) follow(ctx context.Context) (*api.ProcessInfo, error) {
	// The stream outlives ctx: after an interrupt the exit still has to be read.
	streamCtx := context.WithoutCancel(ctx)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	events := make(chan streamResult)
	stop := make(chan struct{})
	defer close(stop)
	go p.read(streamCtx, events, stop)

	ctxDone := ctx.Done()
	var killTimer, giveUp <-chan time.Time
	interrupt := func(sig string) {
		p.signal(streamCtx, sig)
		if killTimer == nil {
			killTimer = time.After(killGrace)
		}
	}
	for {
		select {
		case r := <-events:
			return r.info, r.err
		case s := <-sigs:
			interrupt(signalName(s))
		case <-ctxDone:
			ctxDone = nil
			interrupt("TERM")
		case <-killTimer:
			p.signal(streamCtx, "KILL")
			killTimer = nil
			giveUp = time.After(killGrace)
		case <-giveUp:
			// The daemon is gone or wedged: stop waiting for an exit that
			// may never be reported.
			return nil, api.Errorf(api.KindTimeout, "process %s did not report its end after SIGKILL; it may still run in the Space", p.id)
		}
	}
}

type streamResult struct {
	info *api.ProcessInfo
	err  error
}

// read runs the stream (reconnecting from the offsets reached) and sends
// its end on events.
func (p *remoteProcess) read(ctx context.Context, events chan<- streamResult, stop <-chan struct{}) {
	info, err := p.readStream(ctx, stop)
	select {
	case events <- streamResult{info, err}:
	case <-stop:
	}
}

func (p *remoteProcess) readStream(ctx context.Context, stop <-chan struct{}) (*api.ProcessInfo, error) {
	var lastErr error
	for attempt := 0; attempt <= maxStreamReconnects; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(reconnectBackoff):
			case <-stop:
				return nil, lastErr
			}
		}
		s, err := p.c.StreamProcess(ctx, p.id, p.nextOut, p.nextErr)
		if err != nil {
			if !api.AsError(err).Retryable {
				return nil, err
			}
			lastErr = err
			continue
		}
		info, err := p.drain(s, stop)
		s.Close()
		if err == nil {
			return info, nil
		}
		lastErr = err
	}
	return nil, api.Errorf(api.KindEnv, "output stream of process %s broke %d times (last: %v); it may still run in the Space", p.id, maxStreamReconnects+1, lastErr)
}

// drain copies one stream's events until the exit event or an error.
func (p *remoteProcess) drain(s *client.ProcessStream, stop <-chan struct{}) (*api.ProcessInfo, error) {
	// Close the stream when follow gives up, so Next returns.
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-stop:
			s.Close()
		case <-done:
		}
	}()
	for {
		ev, err := s.Next()
		if err != nil {
			return nil, err
		}
		switch ev.Type {
		case "output":
			w, next := p.stdout, &p.nextOut
			if ev.Stream == api.StreamStderr {
				w, next = p.stderr, &p.nextErr
			}
			// A replay after a reconnect may start before what was already
			// written: skip the overlap so every byte is written once.
			data := ev.Data
			if skip := *next - ev.Offset; skip > 0 {
				if skip >= int64(len(data)) {
					continue
				}
				data = data[skip:]
			}
			if _, err := w.Write(data); err != nil {
				return nil, api.Errorf(api.KindIO, "write output of process %s: %w", p.id, err)
			}
			*next = ev.Offset + int64(len(ev.Data))
		case "gap":
			fmt.Fprintf(p.stderr, "\ncua-bridge: %d bytes of %s were lost (the Space's output buffer overflowed)\n", ev.Lost, ev.Stream)
			if ev.Stream == api.StreamStderr {
				p.nextErr = ev.Offset
			} else {
				p.nextOut = ev.Offset
			}
		case "exit":
			if ev.Exit == nil {
				return nil, api.Errorf(api.KindJSON, "process %s: exit event without its status", p.id)
			}
			return ev.Exit, nil
		}
	}
}

// signal sends sig to the process's whole group; a failure is reported, not
// fatal: the stream still tells how the process ended.
func (p *remoteProcess) signal(ctx context.Context, sig string) {
	ctx, cancel := context.WithTimeout(ctx, signalCallTimeout)
	defer cancel()
	if err := p.c.Signal(ctx, p.id, sig); err != nil && api.KindOf(err) != api.KindNotFound {
		fmt.Fprintf(p.stderr, "cua-bridge: forward SIG%s: %v\n", sig, err)
	}
}

// copyStdin sends r to the process's stdin, then closes it.
func (p *remoteProcess) copyStdin(ctx context.Context, r io.Reader, stderr io.Writer) {
	buf := make([]byte, stdinChunk)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := p.c.WriteStdin(ctx, p.id, buf[:n], false); werr != nil {
				fmt.Fprintf(stderr, "cua-bridge: stdin: %v\n", werr)
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				fmt.Fprintf(stderr, "cua-bridge: read stdin: %v\n", err)
			}
			_, _ = p.c.WriteStdin(ctx, p.id, nil, true)
			return
		}
	}
}

// signalName is the daemon's name of a local signal ("INT").
func signalName(s os.Signal) string {
	if ss, ok := s.(syscall.Signal); ok {
		return strings.TrimPrefix(unix.SignalName(ss), "SIG")
	}
	return "TERM"
}
