package server

import "github.com/trycua/cua-spacesd/spacesd/api"

// fileGroup serves the file capability. (Placeholder until it lands.)
type fileGroup struct{}

func newFileGroup(s *Server) (group, error) { return fileGroup{}, nil }

func (fileGroup) routes() []route                { return nil }
func (fileGroup) probes() map[api.Feature]Prober { return nil }
func (fileGroup) limits(*api.Limits)             {}
func (fileGroup) close()                         {}
