// Package procsvc is the process service of cua-spacesd: one-shot exec,
// detached processes, their output streams, stdin, signals and PTY resize,
// one file per operation. The work is capabilities/process; these handlers
// adapt HTTP to it.
package procsvc

import (
	"context"
	"net/http"
	"sync"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// Service serves the shell and pty features.
type Service struct {
	m       *process.Manager
	feature func(context.Context, api.Feature) api.FeatureStatus

	started  server.Counter
	bytesIn  server.Counter
	bytesOut server.Counter
	pty      func() api.FeatureStatus
}

// New returns the process service over m, which it closes at the hard
// shutdown (every process tree the daemon started dies then).
func New(m *process.Manager) server.NewService {
	return func(h server.Host) (server.Service, error) {
		s := &Service{
			m:        m,
			feature:  h.Feature,
			started:  h.Metrics.Counter(server.MetricProcessesStarted),
			bytesIn:  h.Metrics.Counter(server.MetricBytesIn),
			bytesOut: h.Metrics.Counter(server.MetricBytesOut),
			// Whether the guest has /dev/ptmx does not change while the
			// daemon runs: one probe is enough.
			pty: sync.OnceValue(process.ProbePTY),
		}
		h.Metrics.Gauge("cua_spacesd_processes_running", func() float64 { return float64(m.Running()) })
		return s, nil
	}
}

// Routes of the process service.
func (s *Service) Routes() []server.Route {
	shell, json, bytes := api.FeatureShell, server.BodyJSON, server.BodyBytes
	return []server.Route{
		{Method: http.MethodPost, Path: api.PathExec, Feature: shell, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: s.handleExec},
		{Method: http.MethodPost, Path: api.PathProcesses, Feature: shell, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: s.handleStart},
		{Method: http.MethodGet, Path: api.PathProcesses, Feature: shell, Roles: server.EditorRoles(), Handler: s.handleList},
		{Method: http.MethodGet, Path: api.PathProcess, Feature: shell, Roles: server.EditorRoles(), Handler: s.handleGet},
		{Method: http.MethodGet, Path: api.PathProcessStream, Feature: shell, Roles: server.EditorRoles(), Handler: s.handleStream},
		{Method: http.MethodPost, Path: api.PathProcessStdin, Feature: shell, Body: bytes, Idempotent: true, Roles: server.EditorRoles(), Handler: s.handleStdin},
		{Method: http.MethodPost, Path: api.PathProcessSignal, Feature: shell, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: httpapi.BodyRoute(s.signal)},
		{Method: http.MethodPost, Path: api.PathProcessResize, Feature: shell, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: httpapi.BodyRoute(s.resize)},
	}
}

// Features: shell stands or falls with /bin/sh, pty with /dev/ptmx.
func (s *Service) Features() map[api.Feature]server.Probe {
	return map[api.Feature]server.Probe{
		api.FeatureShell: func(context.Context) api.FeatureStatus { return process.ProbeShell() },
		api.FeaturePTY:   func(context.Context) api.FeatureStatus { return s.pty() },
	}
}

// Limits of the process manager.
func (s *Service) Limits(l *api.Limits) { s.m.Limits(l) }

// Close is the hard shutdown: every running process tree is killed.
func (s *Service) Close() { s.m.Close() }

// processByID finds the process named by the {id} path value.
func (s *Service) processByID(r *http.Request) (*process.Process, error) {
	return s.m.Get(r.PathValue("id"))
}
