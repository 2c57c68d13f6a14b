package server

import "github.com/trycua/cua-spacesd/spacesd/api"

// desktopGroup serves the desktop capability. (Placeholder until it lands.)
type desktopGroup struct{}

func newDesktopGroup(s *Server) (group, error) { return desktopGroup{}, nil }

func (desktopGroup) routes() []route                { return nil }
func (desktopGroup) probes() map[api.Feature]Prober { return nil }
func (desktopGroup) limits(*api.Limits)             {}
func (desktopGroup) close()                         {}
