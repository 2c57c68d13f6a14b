package server

import (
	"context"
	"io"
	"net/http"
	"sync"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
)

// processGroup serves the process capability: one-shot exec, detached
// processes, their output streams, stdin, signals and PTY resize. The work
// is capabilities/process; these handlers adapt HTTP to it.
type processGroup struct {
	s *Server
	m *process.Manager

	ptyOnce   sync.Once
	ptyStatus api.FeatureStatus
}

func newProcessGroup(s *Server) (group, error) {
	g := &processGroup{s: s, m: process.NewManager(process.Options{Logger: s.log.With("capability", "process")})}
	s.metrics.gauge("cua_spacesd_processes_running", func() float64 { return float64(g.m.Running()) })
	return g, nil
}

func (g *processGroup) routes() []route {
	return []route{
		{method: http.MethodPost, path: api.PathExec, feature: api.FeatureShell, handler: g.handleExec},
		{method: http.MethodPost, path: api.PathProcesses, feature: api.FeatureShell, handler: g.handleStart},
		{method: http.MethodGet, path: api.PathProcesses, feature: api.FeatureShell, handler: g.handleList},
		{method: http.MethodGet, path: api.PathProcess, feature: api.FeatureShell, handler: g.handleGet},
		{method: http.MethodGet, path: api.PathProcessStream, feature: api.FeatureShell, handler: g.handleStream},
		{method: http.MethodPost, path: api.PathProcessStdin, feature: api.FeatureShell, handler: g.handleStdin},
		{method: http.MethodPost, path: api.PathProcessSignal, feature: api.FeatureShell, handler: bodyRoute(g.signal)},
		{method: http.MethodPost, path: api.PathProcessResize, feature: api.FeatureShell, handler: bodyRoute(g.resize)},
	}
}

func (g *processGroup) probes() map[api.Feature]Prober {
	return map[api.Feature]Prober{
		api.FeatureShell: probeShell,
		api.FeaturePTY:   g.probePTY,
	}
}

func (g *processGroup) limits(l *api.Limits) {
	ring, maxProcs, retention, maxExec := g.m.Limits()
	l.MaxExecOutputBytes = maxExec
	l.ProcessRingBytes = int64(ring)
	l.MaxProcesses = maxProcs
	l.ExitRetentionSeconds = int(retention.Seconds())
}

// close is the hard shutdown: every running process group is killed.
func (g *processGroup) close() { g.m.Close() }

// probeShell: the shell form runs /bin/sh, so the feature stands or falls
// with it. A stat is cheap enough to answer live on every call.
func probeShell(context.Context) api.FeatureStatus {
	if err := unix.Access(process.ShellPath, unix.X_OK); err != nil {
		return api.FeatureStatus{Limitation: process.ShellPath + " is missing or not executable (" + err.Error() + "); install a POSIX shell in the image"}
	}
	return api.FeatureStatus{Supported: true}
}

// probePTY opens and closes one PTY, once: whether the guest has /dev/ptmx
// (and devpts mounted) does not change while the daemon runs.
func (g *processGroup) probePTY(context.Context) api.FeatureStatus {
	g.ptyOnce.Do(func() {
		p, tty, err := pty.Open()
		if err != nil {
			g.ptyStatus = api.FeatureStatus{Limitation: "cannot open a pseudo-terminal (" + err.Error() + "); mount devpts at /dev/pts with /dev/ptmx"}
			return
		}
		_ = p.Close()
		_ = tty.Close()
		g.ptyStatus = api.FeatureStatus{Supported: true}
	})
	return g.ptyStatus
}

// readJSONBody reads a JSON request body of at most MaxJSONBodyBytes for a
// parser of capabilities/process (which owns the decoding, so it can be
// fuzzed without HTTP).
func readJSONBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxJSONBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if asMaxBytes(err, &tooBig) {
			return nil, api.Errorf(api.KindInvalidArgument, "request body is over %d bytes", MaxJSONBodyBytes)
		}
		return nil, api.Errorf(api.KindInvalidArgument, "read request body: %v", err)
	}
	return b, nil
}

// processByID finds the process named by the {id} path value.
func (g *processGroup) processByID(r *http.Request) (*process.Process, error) {
	return g.m.Get(r.PathValue("id"))
}
