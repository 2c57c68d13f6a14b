package server_test

import (
	"net/http"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// testService mounts the routes a test needs beside the system routes.
type testService struct{ routes []server.Route }

func (s testService) Routes() []server.Route                    { return s.routes }
func (testService) Features() map[api.Feature]server.Probe      { return nil }
func (testService) Limits(*api.Limits)                          {}
func (testService) Close()                                      {}
func (s testService) mount(server.Host) (server.Service, error) { return s, nil }

// served is a Server running on a loopback port.
type served struct {
	*server.Server
	addr string
	stop func() error // ends the server (gracefully), waits for Serve to return and answers its error
}

func (s *served) url() string { return "http://" + s.addr }

// serve runs a Server built from cfg until the test ends or stop is called.
func serve(t *testing.T, cfg server.Config) *served {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slogDiscard()
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := testenv.Serve(t, srv.Serve)
	s := &served{Server: srv, addr: addr, stop: stop}
	// Return a server that is up, its accept loop running and no
	// connection left of the check: a test may take its baseline now.
	// An answer, not just a dial (the kernel completes a dial before
	// anything accepts it), proves the accept loop runs.
	c := dialRaw(t, s.addr)
	c.mustGet(t, "/health", "", http.StatusOK)
	_ = c.Close()
	eventually(t, func() bool { total, _, _, _ := srv.ConnCounts(); return total == 0 })
	return s
}
