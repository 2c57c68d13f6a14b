package api

import (
	"math"
	"net/url"
	"strconv"
)

// The query of every request that has one, as one type each with one
// encoder (Values, which the client sends) and one parser (Parse*Query,
// which the service reads), as StreamOptions and ParseStreamQuery do for
// an offer: a parameter renamed on one side breaks the build, not a user.
//
// The parsers read the first value of a parameter and ignore parameters
// they do not name; an absent or empty parameter is its default. A value
// they cannot read is invalid_argument naming the parameter.

// Names of the query parameters (those of an offer are QueryMaxFPS,
// QueryMaxWidth and QueryMaxHeight).
const (
	QueryAppName      = "app_name"
	QueryWindowID     = "window_id"
	QueryFormat       = "format"
	QueryQuality      = "quality"
	QueryMaxDimension = "max_dimension"

	QueryPath      = "path"
	QueryDepth     = "depth"
	QueryHidden    = "hidden"
	QueryOffset    = "offset"
	QueryLength    = "length"
	QueryMode      = "mode"
	QueryRecursive = "recursive"

	QueryClose        = "close"
	QueryStdoutOffset = "stdout_offset"
	QueryStderrOffset = "stderr_offset"
)

// Bounds of the query parameters.
const (
	// MaxScreenshotDimension bounds max_dimension (and so the work of a
	// scale); reported as limits.max_screenshot_dimension.
	MaxScreenshotDimension = 16384
	// MaxListDepth bounds the depth of a listing.
	MaxListDepth = 32
	// maxUploadOffset bounds an upload chunk's offset: far past any file,
	// and far from overflow when a chunk's length is added.
	maxUploadOffset = 1 << 62
	// JPEG qualities a screenshot may ask for.
	minJPEGQuality, maxJPEGQuality = 1, 100
)

// WindowsQuery is the query of GET /v1/windows: ?app_name= keeps the
// windows whose app name, instance or title holds it (any case).
type WindowsQuery struct {
	AppName string
}

// Values encodes q as ParseWindowsQuery reads it.
func (q WindowsQuery) Values() url.Values {
	v := url.Values{}
	setString(v, QueryAppName, q.AppName)
	return v
}

// ParseWindowsQuery reads the query of GET /v1/windows.
func ParseWindowsQuery(v url.Values) (WindowsQuery, error) {
	return WindowsQuery{AppName: v.Get(QueryAppName)}, nil
}

// Values encodes r as the query of GET /v1/screenshot:
// ?window_id=&format=&quality=&max_dimension=, each only when set.
func (r ScreenshotRequest) Values() url.Values {
	v := url.Values{}
	setInt(v, QueryWindowID, int64(r.WindowID))
	setString(v, QueryFormat, r.Format)
	setInt(v, QueryQuality, int64(r.Quality))
	setInt(v, QueryMaxDimension, int64(r.MaxDimension))
	return v
}

// ParseScreenshotQuery reads the query of GET /v1/screenshot. The format
// is checked where the image is encoded.
func ParseScreenshotQuery(v url.Values) (ScreenshotRequest, error) {
	id, err := queryInt(v, QueryWindowID, 0, 0, math.MaxUint32)
	if err != nil {
		return ScreenshotRequest{}, err
	}
	quality, err := queryInt(v, QueryQuality, 0, minJPEGQuality, maxJPEGQuality)
	if err != nil {
		return ScreenshotRequest{}, err
	}
	maxDim, err := queryInt(v, QueryMaxDimension, 0, 0, MaxScreenshotDimension)
	if err != nil {
		return ScreenshotRequest{}, err
	}
	return ScreenshotRequest{WindowID: uint32(id), Format: v.Get(QueryFormat), Quality: int(quality), MaxDimension: int(maxDim)}, nil
}

// FileStatQuery is the query of GET /v1/files/stat: ?path=.
type FileStatQuery struct {
	Path string
}

// Values encodes q as ParseFileStatQuery reads it.
func (q FileStatQuery) Values() url.Values { return url.Values{QueryPath: {q.Path}} }

// ParseFileStatQuery reads the query of GET /v1/files/stat. The path is
// checked where it is used.
func ParseFileStatQuery(v url.Values) (FileStatQuery, error) {
	return FileStatQuery{Path: v.Get(QueryPath)}, nil
}

// FileListQuery is the query of GET /v1/files/list:
// ?path=&depth=1&hidden=false.
type FileListQuery struct {
	Path string
	// Depth is how many levels to list, 1 (its own entries, the default)
	// to MaxListDepth. It is always sent: a zero Depth is refused.
	Depth  int
	Hidden bool
}

// Values encodes q as ParseFileListQuery reads it.
func (q FileListQuery) Values() url.Values {
	v := url.Values{QueryPath: {q.Path}, QueryDepth: {strconv.Itoa(q.Depth)}}
	setBool(v, QueryHidden, q.Hidden)
	return v
}

// ParseFileListQuery reads the query of GET /v1/files/list.
func ParseFileListQuery(v url.Values) (FileListQuery, error) {
	depth, err := queryInt(v, QueryDepth, 1, 1, MaxListDepth)
	if err != nil {
		return FileListQuery{}, err
	}
	hidden, err := queryBool(v, QueryHidden)
	if err != nil {
		return FileListQuery{}, err
	}
	return FileListQuery{Path: v.Get(QueryPath), Depth: int(depth), Hidden: hidden}, nil
}

// FileReadQuery is the query of GET /v1/files/content:
// ?path=[&offset=][&length=].
type FileReadQuery struct {
	Path string
	// Part says offset or length is given: the answer is Length bytes
	// from Offset (Length < 0: to the end), and no Range header may come
	// with it. Without Part, Offset and Length are zero and unused.
	Part   bool
	Offset int64
	Length int64
}

// Values encodes q as ParseFileReadQuery reads it.
func (q FileReadQuery) Values() url.Values {
	v := url.Values{QueryPath: {q.Path}}
	if q.Part {
		v.Set(QueryOffset, strconv.FormatInt(q.Offset, 10))
		if q.Length >= 0 {
			v.Set(QueryLength, strconv.FormatInt(q.Length, 10))
		}
	}
	return v
}

// ParseFileReadQuery reads the query of GET /v1/files/content.
func ParseFileReadQuery(v url.Values) (FileReadQuery, error) {
	q := FileReadQuery{Path: v.Get(QueryPath)}
	offset, length := v.Get(QueryOffset), v.Get(QueryLength)
	if offset == "" && length == "" {
		return q, nil
	}
	q.Part, q.Length = true, -1
	if offset != "" {
		n, err := strconv.ParseInt(offset, 10, 64)
		if err != nil || n < 0 {
			return FileReadQuery{}, Errorf(KindInvalidArgument, "offset %q must be a non-negative integer", offset)
		}
		q.Offset = n
	}
	if length != "" {
		n, err := strconv.ParseInt(length, 10, 64)
		if err != nil || n < 0 {
			return FileReadQuery{}, Errorf(KindInvalidArgument, "length %q must be a non-negative integer", length)
		}
		q.Length = n
	}
	return q, nil
}

// FileWriteQuery is the query of PUT /v1/files/content: ?path=&mode=.
type FileWriteQuery struct {
	Path string
	// Mode is octal ("0644"); "" keeps the old file's, or the default.
	// It is checked where the file is written, as a body's mode is.
	Mode string
}

// Values encodes q as ParseFileWriteQuery reads it.
func (q FileWriteQuery) Values() url.Values {
	v := url.Values{QueryPath: {q.Path}}
	setString(v, QueryMode, q.Mode)
	return v
}

// ParseFileWriteQuery reads the query of PUT /v1/files/content.
func ParseFileWriteQuery(v url.Values) (FileWriteQuery, error) {
	return FileWriteQuery{Path: v.Get(QueryPath), Mode: v.Get(QueryMode)}, nil
}

// FileWatchQuery is the query of GET /v1/files/watch:
// ?path=&recursive=false.
type FileWatchQuery struct {
	Path      string
	Recursive bool
}

// Values encodes q as ParseFileWatchQuery reads it.
func (q FileWatchQuery) Values() url.Values {
	v := url.Values{QueryPath: {q.Path}}
	setBool(v, QueryRecursive, q.Recursive)
	return v
}

// ParseFileWatchQuery reads the query of GET /v1/files/watch.
func ParseFileWatchQuery(v url.Values) (FileWatchQuery, error) {
	recursive, err := queryBool(v, QueryRecursive)
	if err != nil {
		return FileWatchQuery{}, err
	}
	return FileWatchQuery{Path: v.Get(QueryPath), Recursive: recursive}, nil
}

// UploadChunkQuery is the query of PUT /v1/uploads/{id}: ?offset=N, the
// upload's offset the chunk lands at (required).
type UploadChunkQuery struct {
	Offset int64
}

// Values encodes q as ParseUploadChunkQuery reads it.
func (q UploadChunkQuery) Values() url.Values {
	return url.Values{QueryOffset: {strconv.FormatInt(q.Offset, 10)}}
}

// ParseUploadChunkQuery reads the query of PUT /v1/uploads/{id}.
func ParseUploadChunkQuery(v url.Values) (UploadChunkQuery, error) {
	if v.Get(QueryOffset) == "" {
		return UploadChunkQuery{}, Errorf(KindInvalidArgument, "the %s query parameter is required", QueryOffset)
	}
	offset, err := queryInt(v, QueryOffset, 0, 0, maxUploadOffset)
	return UploadChunkQuery{Offset: offset}, err
}

// StdinQuery is the query of POST /v1/processes/{id}/stdin: ?close=true
// closes stdin after the body is written.
type StdinQuery struct {
	Close bool
}

// Values encodes q as ParseStdinQuery reads it.
func (q StdinQuery) Values() url.Values {
	v := url.Values{}
	setBool(v, QueryClose, q.Close)
	return v
}

// ParseStdinQuery reads the query of POST /v1/processes/{id}/stdin.
func ParseStdinQuery(v url.Values) (StdinQuery, error) {
	closeAfter, err := queryBool(v, QueryClose)
	return StdinQuery{Close: closeAfter}, err
}

// ProcessStreamQuery is the query of GET /v1/processes/{id}/stream:
// ?stdout_offset=N&stderr_offset=M, where each stream starts (default 0).
type ProcessStreamQuery struct {
	StdoutOffset int64
	StderrOffset int64
}

// Values encodes q as ParseProcessStreamQuery reads it. Both offsets are
// always sent.
func (q ProcessStreamQuery) Values() url.Values {
	return url.Values{
		QueryStdoutOffset: {strconv.FormatInt(q.StdoutOffset, 10)},
		QueryStderrOffset: {strconv.FormatInt(q.StderrOffset, 10)},
	}
}

// ParseProcessStreamQuery reads the query of GET /v1/processes/{id}/stream.
func ParseProcessStreamQuery(v url.Values) (ProcessStreamQuery, error) {
	out, err := queryInt(v, QueryStdoutOffset, 0, 0, math.MaxInt64)
	if err != nil {
		return ProcessStreamQuery{}, err
	}
	errOff, err := queryInt(v, QueryStderrOffset, 0, 0, math.MaxInt64)
	if err != nil {
		return ProcessStreamQuery{}, err
	}
	return ProcessStreamQuery{StdoutOffset: out, StderrOffset: errOff}, nil
}

// queryInt reads an optional integer parameter within [lo, hi].
func queryInt(v url.Values, name string, def, lo, hi int64) (int64, error) {
	s := v.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, Errorf(KindInvalidArgument, "query parameter %s=%q must be an integer from %d to %d", name, s, lo, hi)
	}
	return n, nil
}

// queryBool reads an optional boolean parameter (strconv.ParseBool's
// spellings).
func queryBool(v url.Values, name string) (bool, error) {
	s := v.Get(name)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, Errorf(KindInvalidArgument, "query parameter %s=%q must be true or false", name, s)
	}
	return b, nil
}

// The encoders send a parameter only when it is not its default, as the
// parsers read an absent one.

func setString(v url.Values, name, s string) {
	if s != "" {
		v.Set(name, s)
	}
}

func setInt(v url.Values, name string, n int64) {
	if n != 0 {
		v.Set(name, strconv.FormatInt(n, 10))
	}
}

func setBool(v url.Values, name string, b bool) {
	if b {
		v.Set(name, "true")
	}
}
