package audio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/audio/internal/pulse"
)

// Probe answers nil when a sound server with a default sink (and its
// monitor, or opts.Source) is reachable, and else an error of kind
// capability_missing whose message is one sentence saying what is missing
// and what to do. It takes at most ProbeTimeout; a caller whose ctx ends
// first gets kind cancelled (or timeout).
func Probe(ctx context.Context, opts Options) error {
	if err := opts.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, ProbeTimeout, errBound)
	defer cancel()
	if err := probe(ctx, opts); err != nil {
		return describe(ctx, err, opts.Source, ProbeTimeout).apiError(true)
	}
	return nil
}

func probe(ctx context.Context, opts Options) error {
	conn, server, err := connect(ctx, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	source := opts.Source
	if source == "" {
		if source, err = defaultMonitor(ctx, conn); err != nil {
			return atServer(server, err)
		}
	}
	if _, err := conn.LookupSource(ctx, source); err != nil {
		return atServer(server, err)
	}
	return nil
}

// errBound is the cause of a context that Open's or Probe's own bound
// ended, as opposed to the caller's.
var errBound = errors.New("the sound server did not answer in time")

// errNoDefaultSink is a server without a default sink.
var errNoDefaultSink = errors.New("the sound server has no default sink")

// noServer is every address tried refusing the connection (or not
// there).
type noServer struct {
	addrs []pulse.Address
	err   error
}

func (e *noServer) Error() string {
	return fmt.Sprintf("no sound server at %s: %v", addrList(e.addrs), e.err)
}
func (e *noServer) Unwrap() error { return e.err }

// serverErr is an error of the server at an address.
type serverErr struct {
	server string
	err    error
}

func (e *serverErr) Error() string { return e.server + ": " + e.err.Error() }
func (e *serverErr) Unwrap() error { return e.err }

func atServer(server string, err error) error { return &serverErr{server: server, err: err} }

// badAddress is a server string that does not parse.
type badAddress struct{ err error }

func (e *badAddress) Error() string { return e.err.Error() }
func (e *badAddress) Unwrap() error { return e.err }

func addrList(addrs []pulse.Address) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, " or ")
}

// connect dials the first server that takes the connection and
// authenticates, answering its address.
func connect(ctx context.Context, opts Options) (*pulse.Conn, string, error) {
	env := pulse.HostEnvironment()
	addrs, err := env.Addresses(opts.Server)
	if err != nil {
		return nil, "", &badAddress{err}
	}
	cookie, _ := env.Cookie()
	cfg := pulse.Config{Cookie: cookie, Props: []pulse.Prop{
		pulse.StringProp("application.name", "cua-spacesd"),
		pulse.StringProp("application.process.id", strconv.Itoa(os.Getpid())),
	}}
	var errs []error
	for _, a := range addrs {
		conn, err := pulse.Dial(ctx, a, cfg)
		if err == nil {
			return conn, a.String(), nil
		}
		var op *net.OpError
		if !errors.As(err, &op) || op.Op != "dial" || ctx.Err() != nil {
			// It answered, and failed: no use trying another.
			return nil, a.String(), atServer(a.String(), err)
		}
		errs = append(errs, err)
	}
	return nil, addrList(addrs), &noServer{addrs: addrs, err: errors.Join(errs...)}
}

// defaultMonitor names the default sink's monitor: what the desktop plays.
func defaultMonitor(ctx context.Context, conn *pulse.Conn) (string, error) {
	info, err := conn.ServerInfo(ctx)
	if err != nil {
		return "", err
	}
	if info.DefaultSink == "" {
		return "", errNoDefaultSink
	}
	// The monitor's name, by the convention of PulseAudio and PipeWire
	// alike; the server's default source is the monitor only when the
	// machine has no microphone.
	return info.DefaultSink + ".monitor", nil
}

// problem is why the sound server cannot be used: the kind Open answers,
// and one sentence that is also the feature's limitation.
type problem struct {
	kind     api.Kind
	sentence string
	err      error
	// caller says the caller's context ended: no sign of the server.
	caller bool
}

// apiError is the problem as Open (probe false) or Probe answers it: to
// Probe everything but the caller's own end is a missing capability.
func (p problem) apiError(probe bool) *api.Error {
	kind := p.kind
	if probe && !p.caller {
		kind = api.KindCapabilityMissing
	}
	return api.Errorf(kind, "%s", p.sentence).WithCause(p.err)
}

// describe turns what connect, probe or open answered into a problem.
// bound is the timeout of ctx's own that errBound marks.
func describe(ctx context.Context, err error, source string, bound time.Duration) problem {
	server := "the configured address"
	var se *serverErr
	if errors.As(err, &se) {
		server = se.server
	}
	var ns *noServer
	var ba *badAddress
	p := problem{err: err}
	switch {
	case errors.As(err, &ns):
		p.kind = api.KindCapabilityMissing
		p.sentence = fmt.Sprintf("no sound server at %s: start PulseAudio or PipeWire's pipewire-pulse in the guest (PULSE_SERVER or $XDG_RUNTIME_DIR/pulse/native)", addrList(ns.addrs))
	case errors.As(err, &ba):
		p.kind = api.KindInvalidArgument
		p.sentence = fmt.Sprintf("the sound server address is not valid (%v)", ba.err)
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), errBound):
		p.kind = api.KindTimeout
		p.sentence = fmt.Sprintf("the sound server at %s did not answer within %v", server, bound)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		p.kind, p.caller = api.KindTimeout, true
		p.sentence = fmt.Sprintf("the sound server at %s did not answer before the caller's deadline", server)
	case ctx.Err() != nil:
		p.kind, p.caller = api.KindCancelled, true
		p.sentence = fmt.Sprintf("the call was cancelled before the sound server at %s answered", server)
	case errors.Is(err, errNoDefaultSink):
		p.kind = api.KindCapabilityMissing
		p.sentence = fmt.Sprintf("the sound server at %s has no output (no default sink): load one, for example with pactl load-module module-null-sink", server)
	case errors.Is(err, pulse.CodeAccess):
		p.kind = api.KindPermissionDenied
		p.sentence = fmt.Sprintf("the sound server at %s refused cua-spacesd (access denied): run the daemon as the sound server's user, or point PULSE_COOKIE at the server's cookie", server)
	case errors.Is(err, pulse.CodeNoEntity) && source != "":
		p.kind = api.KindNotFound
		p.sentence = fmt.Sprintf("the sound server at %s has no source %q (pactl list short sources lists them)", server, source)
	case errors.Is(err, pulse.CodeNoEntity):
		// The default sink's monitor is missing: a sink without one.
		p.kind = api.KindCapabilityMissing
		p.sentence = fmt.Sprintf("the sound server at %s has no monitor of its default sink to record the desktop from", server)
	case errors.Is(err, pulse.CodeVersion):
		p.kind = api.KindCapabilityMissing
		p.sentence = fmt.Sprintf("the sound server at %s is too old: %v", server, errors.Unwrap(err))
	default:
		p.kind = api.KindEnv
		p.sentence = fmt.Sprintf("the sound server at %s failed: %v", server, errors.Unwrap(err))
		if se == nil {
			p.sentence = fmt.Sprintf("the sound server failed: %v", err)
		}
	}
	return p
}
