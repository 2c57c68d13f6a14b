package server

import "github.com/trycua/cua-spacesd/spacesd/api"

// processGroup serves the process capability. (Placeholder until it lands.)
type processGroup struct{}

func newProcessGroup(s *Server) (group, error) { return processGroup{}, nil }

func (processGroup) routes() []route                { return nil }
func (processGroup) probes() map[api.Feature]Prober { return nil }
func (processGroup) limits(*api.Limits)             {}
func (processGroup) close()                         {}
