// Package filesvc is the files service of cua-spacesd: stat, list, mkdir,
// move, remove, ranged reads, atomic writes, resumable uploads and watches,
// one file per operation. The work is capabilities/files; these handlers
// adapt HTTP to it.
package filesvc

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// Options configure the files service.
type Options struct {
	// StateDir holds the journal of unfinished uploads and of the temp
	// files of writes, so that uploads survive a restart and a crash
	// leaves no temp file behind for ever. "" keeps no journal: uploads
	// then resume after a restart only when announced again.
	StateDir string
}

// DefaultStateDir is where a daemon keeps its state unless told otherwise:
// /var/lib/cua-spacesd as root, else $XDG_STATE_HOME/cua-spacesd, else
// cua-spacesd in the user's cache directory.
func DefaultStateDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/cua-spacesd"
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "cua-spacesd")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "cua-spacesd")
	}
	return ""
}

// Service serves the files and fs_watch features.
type Service struct {
	journal  *files.Journal
	uploads  *files.Uploads
	bytesIn  server.Counter
	bytesOut server.Counter
	// watchSupport probes once whether a file watcher can be created: the
	// answer only changes with kernel limits, and a probe costs a syscall
	// pair per capabilities call otherwise.
	watchSupport func() (bool, string)
}

// New returns the files service; it keeps the unfinished uploads. A state
// directory that cannot be used is logged, and the daemon goes on without
// a journal: the files feature matters more than resuming after a crash.
func New(opts Options) server.NewService {
	return func(h server.Host) (server.Service, error) {
		var j *files.Journal
		if opts.StateDir != "" {
			var err error
			if j, err = files.OpenJournal(opts.StateDir, h.Log); err != nil {
				h.Log.Warn("files: no journal; unfinished uploads will not survive a restart and a crash may leave temp files", "err", err)
				j = nil
			}
		}
		return &Service{
			journal:      j,
			uploads:      files.NewUploads(files.UploadOptions{Logger: h.Log, Journal: j}),
			bytesIn:      h.Metrics.Counter(server.MetricBytesIn),
			bytesOut:     h.Metrics.Counter(server.MetricBytesOut),
			watchSupport: sync.OnceValues(files.FSWatchSupported),
		}, nil
	}
}

// Routes of the files service.
func (s *Service) Routes() []server.Route {
	f, json, bytes := api.FeatureFiles, server.BodyJSON, server.BodyBytes
	return []server.Route{
		{Method: http.MethodGet, Path: api.PathFileStat, Feature: f, Roles: server.EditorRoles(), Handler: s.handleStat},
		{Method: http.MethodGet, Path: api.PathFileList, Feature: f, Roles: server.EditorRoles(), Handler: s.handleList},
		{Method: http.MethodPost, Path: api.PathFileMkdir, Feature: f, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: httpapi.BodyRoute(httpapi.Done(files.Mkdir))},
		{Method: http.MethodPost, Path: api.PathFileMove, Feature: f, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: httpapi.BodyRoute(httpapi.Done(files.Move))},
		{Method: http.MethodPost, Path: api.PathFileRemove, Feature: f, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: httpapi.BodyRoute(httpapi.Done(files.Remove))},
		{Method: http.MethodGet, Path: api.PathFileContent, Feature: f, Roles: server.EditorRoles(), Handler: s.handleRead},
		{Method: http.MethodPut, Path: api.PathFileContent, Feature: f, Body: bytes, Idempotent: true, Roles: server.EditorRoles(), Handler: s.handleWrite},
		{Method: http.MethodGet, Path: api.PathFileWatch, Feature: api.FeatureFSWatch, Roles: server.EditorRoles(), Handler: s.handleWatch},
		{Method: http.MethodPost, Path: api.PathUploads, Feature: f, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: s.handleUploadBegin},
		{Method: http.MethodGet, Path: api.PathUpload, Feature: f, Roles: server.EditorRoles(), Handler: s.handleUploadStatus},
		{Method: http.MethodPut, Path: api.PathUpload, Feature: f, Body: bytes, Idempotent: true, Roles: server.EditorRoles(), Handler: s.handleUploadChunk},
		{Method: http.MethodDelete, Path: api.PathUpload, Feature: f, Idempotent: true, Roles: server.EditorRoles(), Handler: s.handleUploadAbort},
		{Method: http.MethodPost, Path: api.PathUploadDone, Feature: f, Body: json, Idempotent: true, Roles: server.EditorRoles(), Handler: s.handleUploadCommit},
	}
}

// Features: files needs nothing but the daemon; fs_watch needs inotify.
func (s *Service) Features() map[api.Feature]server.Probe {
	return map[api.Feature]server.Probe{
		api.FeatureFiles: func(context.Context) api.FeatureStatus { return api.FeatureStatus{Supported: true} },
		api.FeatureFSWatch: func(context.Context) api.FeatureStatus {
			ok, lim := s.watchSupport()
			return api.FeatureStatus{Supported: ok, Limitation: lim}
		},
	}
}

// Limits of the files service.
func (s *Service) Limits(l *api.Limits) { l.UploadChunkBytes = files.MaxUploadChunkBytes }

// Close stops the uploads' janitor; partial files (and their records in
// the journal) stay for a resume.
func (s *Service) Close() {
	s.uploads.Close()
	s.journal.Close()
}

// countIn returns a counter of request body bytes for the metrics.
func (s *Service) countIn() func(int) {
	return func(n int) { s.bytesIn.Add(int64(n)) }
}
