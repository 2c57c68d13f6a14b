package server

import (
	"context"
	"net/http"
	"sync"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
)

// fileGroup serves the files capability: each handler adapts one HTTP call
// to capabilities/files (file_*.go and upload_*.go, one per operation).
type fileGroup struct {
	s       *Server
	uploads *files.Uploads
	// watchSupport probes once whether a file watcher can be created: the
	// answer only changes with kernel limits, and a probe costs a syscall
	// pair per capabilities call otherwise.
	watchSupport func() (bool, string)
}

func newFileGroup(s *Server) (group, error) {
	return &fileGroup{
		s:            s,
		uploads:      files.NewUploads(files.UploadOptions{Logger: s.log}),
		watchSupport: sync.OnceValues(files.FSWatchSupported),
	}, nil
}

func (g *fileGroup) routes() []route {
	f := api.FeatureFiles
	return []route{
		{method: http.MethodGet, path: api.PathFileStat, feature: f, handler: g.handleStat},
		{method: http.MethodGet, path: api.PathFileList, feature: f, handler: g.handleList},
		{method: http.MethodPost, path: api.PathFileMkdir, feature: f, handler: bodyRoute(done(files.Mkdir))},
		{method: http.MethodPost, path: api.PathFileMove, feature: f, handler: bodyRoute(done(files.Move))},
		{method: http.MethodPost, path: api.PathFileRemove, feature: f, handler: bodyRoute(done(files.Remove))},
		{method: http.MethodGet, path: api.PathFileContent, feature: f, handler: g.handleRead},
		{method: http.MethodPut, path: api.PathFileContent, feature: f, handler: g.handleWrite},
		{method: http.MethodGet, path: api.PathFileWatch, feature: api.FeatureFSWatch, handler: g.handleWatch},
		{method: http.MethodPost, path: api.PathUploads, feature: f, handler: g.handleUploadBegin},
		{method: http.MethodGet, path: api.PathUpload, feature: f, handler: g.handleUploadStatus},
		{method: http.MethodPut, path: api.PathUpload, feature: f, handler: g.handleUploadChunk},
		{method: http.MethodDelete, path: api.PathUpload, feature: f, handler: g.handleUploadAbort},
		{method: http.MethodPost, path: api.PathUploadDone, feature: f, handler: g.handleUploadCommit},
	}
}

func (g *fileGroup) probes() map[api.Feature]Prober {
	return map[api.Feature]Prober{
		api.FeatureFiles: func(ctx context.Context) api.FeatureStatus { return api.FeatureStatus{Supported: true} },
		api.FeatureFSWatch: func(ctx context.Context) api.FeatureStatus {
			ok, lim := g.watchSupport()
			return api.FeatureStatus{Supported: ok, Limitation: lim}
		},
	}
}

func (g *fileGroup) limits(l *api.Limits) { l.UploadChunkBytes = files.MaxUploadChunkBytes }

func (g *fileGroup) close() { g.uploads.Close() }

// countIn returns a counter of request body bytes for the metrics.
func (g *fileGroup) countIn() func(int) {
	return func(n int) { g.s.metrics.BytesIn.Add(int64(n)) }
}
