package mcpsvc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/mcp/mcpclient"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
)

// The life of a declared service.
const (
	// restartBackoffMin and restartBackoffMax bound the wait before a
	// service that failed (crashed, or never answered initialize) is
	// started again; it doubles with each failure in a row.
	restartBackoffMin = 250 * time.Millisecond
	restartBackoffMax = 30 * time.Second
	// healthyRun is how long a session must have lived for its end to
	// count as a first failure again.
	healthyRun = time.Minute
	// maxRestartWait is the longest a call waits for a backoff to run
	// out; a longer one answers at once (retryable), never holding the
	// caller for a service that keeps failing.
	maxRestartWait = 5 * time.Second
	// stopGrace is how long a stdio service has to exit once its stdin is
	// closed, and then once more after SIGTERM, before SIGKILL.
	stopGrace = 3 * time.Second
	// exitWait is how long an error message waits to name how a process
	// that just broke its session ended, its last stderr lines included:
	// the process manager's drain of its output, and a second more.
	exitWait = process.DrainGrace + time.Second
)

// Service states of spacetools.ServiceInfo.
const (
	stateRunning  = "running"
	stateStarting = "starting"
	stateStopped  = "stopped"
	stateFailed   = "failed"
)

// supervisor runs one declared service: it starts it on first use, passes
// calls to it, starts it again (no sooner than its backoff) after it
// fails, and stops it when it has been idle for its IdleTimeout.
type supervisor struct {
	cfg     ServiceConfig
	log     *slog.Logger
	procs   *process.Manager
	version string

	life context.Context // ends at close: no more starts
	stop context.CancelFunc
	wg   sync.WaitGroup // the watchers of the runs

	mu        sync.Mutex
	run       *run          // the running session, nil when none
	starting  *startAttempt // the start in progress, nil when none
	failed    bool
	lastErr   string
	crashes   int       // failures in a row
	restarts  int       // starts after a failure
	notBefore time.Time // no start before this (backoff)
	inflight  int
	idle      *time.Timer
}

// startAttempt is a start of the service in progress, which the calls that come
// meanwhile wait for.
type startAttempt struct {
	done chan struct{}
	err  error // why it failed, set before done is closed
}

// run is one session with the service: for a stdio service, one process.
type run struct {
	sess     *mcpclient.Session
	proc     *process.Process // nil for an HTTP service
	stdout   io.Closer        // the reading end of the process's stdout
	lines    *lineLog
	started  time.Time
	stopping bool          // ended on purpose (idle, shutdown), not a failure
	gone     chan struct{} // closed once its watcher has recorded its end
}

func newSupervisor(cfg ServiceConfig, procs *process.Manager, log *slog.Logger, version string) *supervisor {
	s := &supervisor{cfg: cfg, procs: procs, version: version, log: log.With("mcp_service", cfg.Name)}
	s.life, s.stop = context.WithCancel(context.Background())
	return s
}

// mcpError is a failure of the service, in the caller's words.
func (s *supervisor) mcpError(format string, a ...any) *api.Error {
	return api.Errorf(api.KindMCP, "MCP service %s: %s", s.cfg.Name, fmt.Sprintf(format, a...)).
		WithHint("list_tools shows the services and their state; the daemon's log has the service's stderr under mcp_service=" + s.cfg.Name)
}

// acquire answers the running session, starting one if need be, and a
// release the caller calls when done with it.
func (s *supervisor) acquire(ctx context.Context) (*run, func(), error) {
	for {
		s.mu.Lock()
		if s.life.Err() != nil {
			s.mu.Unlock()
			return nil, nil, s.mcpError("the daemon is shutting down")
		}
		if r := s.run; r != nil {
			select {
			case <-r.sess.Done():
				// It ended and its watcher has not yet recorded how: wait
				// for that, so that this call starts the next one (after
				// its backoff) instead of failing on the dead one.
				s.mu.Unlock()
				select {
				case <-r.gone:
					continue
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
			default:
			}
			s.inflight++
			if s.idle != nil {
				s.idle.Stop()
			}
			s.mu.Unlock()
			return r, s.release, nil
		}
		if st := s.starting; st != nil {
			s.mu.Unlock()
			select {
			case <-st.done:
				// A start that failed fails its waiters too: each starting
				// again in turn would hold the last of them many bounds.
				if st.err != nil {
					return nil, nil, st.err
				}
				continue
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		if wait := time.Until(s.notBefore); wait > 0 {
			lastErr := s.lastErr
			s.mu.Unlock()
			if wait > maxRestartWait {
				return nil, nil, s.mcpError("it failed %s; it starts again in %s", lastErr, wait.Round(100*time.Millisecond)).WithRetryable(true)
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return nil, nil, ctx.Err()
			}
		}
		st := &startAttempt{done: make(chan struct{})}
		s.starting = st
		s.mu.Unlock()

		r, err := s.start()
		s.mu.Lock()
		s.starting, st.err = nil, err
		close(st.done)
		if err != nil {
			s.failedLocked(err.Error(), time.Time{})
			s.mu.Unlock()
			return nil, nil, err
		}
		if s.failed {
			s.restarts++
		}
		s.failed, s.lastErr = false, ""
		s.run = r
		s.wg.Add(1)
		go s.watch(r)
		s.mu.Unlock()
	}
}

// release ends a call; the last one arms the idle stop.
func (s *supervisor) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	if s.inflight > 0 {
		return
	}
	if s.idle == nil {
		s.idle = time.AfterFunc(s.cfg.IdleTimeout, s.idleStop)
		return
	}
	s.idle.Reset(s.cfg.IdleTimeout)
}

// idleStop ends the session of a service nobody called for IdleTimeout.
func (s *supervisor) idleStop() {
	s.mu.Lock()
	r := s.run
	if r == nil || s.inflight > 0 {
		s.mu.Unlock()
		return
	}
	r.stopping, s.run = true, nil
	s.mu.Unlock()
	s.log.Info("MCP service idle: stopped; it starts again on its next call", "idle", s.cfg.IdleTimeout)
	_ = r.sess.Close()
}

// failedLocked records a failure and its backoff. started is when the
// failed session began (zero: it never did).
func (s *supervisor) failedLocked(why string, started time.Time) {
	if !started.IsZero() && time.Since(started) >= healthyRun {
		s.crashes = 0
	}
	s.crashes++
	backoff := restartBackoffMin << min(s.crashes-1, 16)
	if backoff > restartBackoffMax {
		backoff = restartBackoffMax
	}
	s.failed, s.lastErr, s.notBefore = true, why, time.Now().Add(backoff)
	s.log.Warn("MCP service failed; it starts again on its next call", "why", why, "backoff", backoff, "failures_in_a_row", s.crashes)
}

// watch waits for a session's end, stops what is left of it and records
// a failure unless the end was asked for.
func (s *supervisor) watch(r *run) {
	defer s.wg.Done()
	defer close(r.gone)
	<-r.sess.Done()
	s.mu.Lock()
	stopping := r.stopping
	s.mu.Unlock()
	if r.proc != nil {
		s.stopProcess(r.proc, stopping)
	}
	if r.stdout != nil {
		_ = r.stdout.Close()
	}
	if r.lines != nil {
		_ = r.lines.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == r {
		s.run = nil
	}
	if !stopping {
		s.failedLocked(r.ended(), r.started)
	}
}

// stopProcess ends a stdio service's process: one asked to stop had its
// stdin closed and gets stopGrace to exit, then SIGTERM and stopGrace
// more; one whose session broke is killed at once. Either way, what is
// left of its tree is killed after (through its cgroup): the service's
// background children, setsid ones included, are the service's, and
// would otherwise live on, listed and counted, until the daemon stops.
func (s *supervisor) stopProcess(p *process.Process, graceful bool) {
	if graceful {
	grace:
		for _, sig := range []syscall.Signal{0, syscall.SIGTERM} {
			if sig != 0 {
				_ = p.Signal(sig, true)
			}
			t := time.NewTimer(stopGrace)
			select {
			case <-p.LeaderExited():
				t.Stop()
				break grace
			case <-t.C:
			}
		}
	}
	// An error here says the tree is already gone.
	_ = p.Signal(syscall.SIGKILL, true)
	<-p.Done()
}

// ended says how a session ended, and the service's last stderr lines.
func (r *run) ended() string { return r.how() + r.lines.tailNote() }

// how says how a session ended: the process's exit for a stdio service,
// the transport's error for an HTTP one.
func (r *run) how() string {
	why := ""
	if r.proc != nil {
		t := time.NewTimer(exitWait)
		defer t.Stop()
		select {
		case <-r.proc.Done():
			code, sig := r.proc.ExitStatus()
			why = fmt.Sprintf("exited with status %d", code)
			if sig != "" {
				why = "was killed by " + sig
			}
		case <-t.C:
			why = "closed its stdout"
		}
	} else {
		why = fmt.Sprintf("its session ended (%v)", r.sess.Err())
	}
	return why
}

// start starts the service and initializes a session with it, within
// InitTimeout.
func (s *supervisor) start() (*run, error) {
	ctx, cancel := context.WithTimeout(s.life, s.cfg.InitTimeout)
	defer cancel()
	lines := newLineLog(s.log)
	opts := mcpclient.Options{
		ClientName: "cua-spacesd", ClientVersion: s.version, Logger: s.log,
		// The service's log messages go where its stderr goes, as bounded.
		Notify: func(method string, params json.RawMessage) {
			if method == "notifications/message" {
				_, _ = lines.Write(append(append([]byte(method+": "), bytes.TrimSpace(params)...), '\n'))
			}
		},
	}
	if s.cfg.Transport == TransportHTTP {
		sess, err := mcpclient.ConnectHTTP(ctx, s.cfg.URL, loopbackClient(s.cfg.Headers), opts)
		if err != nil {
			return nil, s.initError(ctx, err, nil, lines)
		}
		s.log.Info("MCP service connected", "url", s.cfg.URL, "protocol", sess.ProtocolVersion())
		return &run{sess: sess, lines: lines, started: time.Now(), gone: make(chan struct{})}, nil
	}
	outR, outW := io.Pipe()
	p, err := s.procs.StartAttached(api.StartRequest{
		Command: api.Command{Argv: append([]string{s.cfg.Command}, s.cfg.Args...), Env: s.cfg.Env, Cwd: s.cfg.Cwd, User: s.cfg.User},
		Stdin:   true,
		Tag:     "mcp:" + s.cfg.Name,
	}, process.Attach{Stdout: outW, Stderr: lines})
	if err != nil {
		_ = outR.Close()
		return nil, s.mcpError("cannot start %s: %v", s.cfg.Command, err)
	}
	sess, err := mcpclient.ConnectIO(ctx, outR, stdin{p}, opts)
	if err != nil {
		// Worded before the kill, which would otherwise be how it ended.
		err = s.initError(ctx, err, &run{proc: p, lines: lines}, lines)
		_ = p.Signal(syscall.SIGKILL, true)
		_ = outR.Close()
		return nil, err
	}
	s.log.Info("MCP service started", "process", p.ID(), "pid", p.PID(), "protocol", sess.ProtocolVersion())
	return &run{sess: sess, proc: p, stdout: outR, lines: lines, started: time.Now(), gone: make(chan struct{})}, nil
}

// initError says why a start failed: no answer to initialize within the
// bound, or the process's end.
func (s *supervisor) initError(ctx context.Context, err error, r *run, lines *lineLog) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return s.mcpError("it did not answer initialize within %s%s", s.cfg.InitTimeout, lines.tailNote())
	case s.life.Err() != nil:
		return s.mcpError("the daemon is shutting down")
	case r != nil && errors.Is(err, mcpclient.ErrClosed):
		// The tail after how, which waits for the exit: only then is all
		// of the process's stderr surely in (a loaded machine showed the
		// note missing when it was read at the stdout's close).
		how := r.how()
		return s.mcpError("it %s before answering initialize%s", how, lines.tailNote())
	}
	return s.mcpError("initialize: %v%s", err, lines.tailNote())
}

// info is the service as list_tools shows it.
func (s *supervisor) info() spacetools.ServiceInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := spacetools.ServiceInfo{Name: s.cfg.Name, Transport: s.cfg.Transport, State: stateStopped, Restarts: s.restarts}
	switch {
	case s.run != nil:
		i.State = stateRunning
	case s.starting != nil:
		i.State = stateStarting
	case s.failed:
		i.State, i.Error = stateFailed, s.lastErr
	}
	return i
}

// close stops the service for good and waits for it.
func (s *supervisor) close() {
	s.mu.Lock()
	s.stop()
	r := s.run
	if r != nil {
		r.stopping, s.run = true, nil
	}
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	if r != nil {
		_ = r.sess.Close()
	}
	s.wg.Wait()
}

// call runs f with the service's session, and words its failure.
func (s *supervisor) call(ctx context.Context, what string, f func(*mcpclient.Session) (json.RawMessage, error)) (json.RawMessage, error) {
	r, release, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	raw, err := f(r.sess)
	if err == nil {
		return raw, nil
	}
	var rpc *mcpclient.RPCError
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &rpc):
		return nil, s.mcpError("%s: %s", what, rpc.Error())
	case errors.Is(err, mcpclient.ErrClosed):
		return nil, s.mcpError("it ended during %s: %s; it starts again on the next call", what, r.ended()).WithRetryable(true)
	}
	return nil, s.mcpError("%s: %v", what, err)
}

// stdin is a stdio service's stdin as the transport writes it: one
// message a write, bounded by the process manager's stall limit.
type stdin struct{ p *process.Process }

func (w stdin) Write(b []byte) (int, error) {
	n, err := w.p.WriteStdin(context.Background(), bytes.NewReader(b), false)
	return int(n), err
}

func (w stdin) Close() error { return w.p.CloseStdin() }

// loopbackClient reaches an HTTP service on the guest's loopback only:
// every connection is checked to go to a loopback address (a name could
// resolve elsewhere), and redirects are not followed.
func loopbackClient(headers map[string]string) *http.Client {
	d := &net.Dialer{
		Timeout: 10 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
				return fmt.Errorf("%s is not a loopback address", address)
			}
			return nil
		},
	}
	t := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}
	return &http.Client{
		Transport:     headerTransport{base: t, headers: headers},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// headerTransport adds a service's configured headers to its requests.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}
