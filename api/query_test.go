package api_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
)

// The wire of every query, as docs/api.md names it: a constant renamed in
// api changes what users send, so it must fail here too.
func TestQueryWire(t *testing.T) {
	for _, tt := range []struct {
		name string
		got  url.Values
		want string
	}{
		{"windows", api.WindowsQuery{AppName: "XTerm"}.Values(), "app_name=XTerm"},
		{"windows, all", api.WindowsQuery{}.Values(), ""},
		{"screenshot", api.ScreenshotRequest{WindowID: 7, Format: "jpeg", Quality: 50, MaxDimension: 800}.Values(),
			"format=jpeg&max_dimension=800&quality=50&window_id=7"},
		{"screenshot, defaults", api.ScreenshotRequest{}.Values(), ""},
		{"stat", api.FileStatQuery{Path: "/a b"}.Values(), "path=%2Fa+b"},
		{"list", api.FileListQuery{Path: "/a", Depth: 2, Hidden: true}.Values(), "depth=2&hidden=true&path=%2Fa"},
		{"list, depth 0 is sent", api.FileListQuery{Path: "/a"}.Values(), "depth=0&path=%2Fa"},
		{"read", api.FileReadQuery{Path: "/a"}.Values(), "path=%2Fa"},
		{"read, part", api.FileReadQuery{Path: "/a", Part: true, Offset: 3, Length: 4}.Values(), "length=4&offset=3&path=%2Fa"},
		{"read, to the end", api.FileReadQuery{Path: "/a", Part: true, Offset: 3, Length: -1}.Values(), "offset=3&path=%2Fa"},
		{"write", api.FileWriteQuery{Path: "/a", Mode: "0600"}.Values(), "mode=0600&path=%2Fa"},
		{"watch", api.FileWatchQuery{Path: "/a", Recursive: true}.Values(), "path=%2Fa&recursive=true"},
		{"upload chunk", api.UploadChunkQuery{}.Values(), "offset=0"},
		{"stdin", api.StdinQuery{Close: true}.Values(), "close=true"},
		{"stdin, open", api.StdinQuery{}.Values(), ""},
		{"process stream", api.ProcessStreamQuery{StdoutOffset: 5}.Values(), "stderr_offset=0&stdout_offset=5"},
	} {
		if got := tt.got.Encode(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// Each parser reads its defaults, what its encoder writes, and refuses
// what it cannot read with invalid_argument naming the parameter.
func TestParseQueries(t *testing.T) {
	var (
		windows    = anyParser(api.ParseWindowsQuery)
		screenshot = anyParser(api.ParseScreenshotQuery)
		stat       = anyParser(api.ParseFileStatQuery)
		list       = anyParser(api.ParseFileListQuery)
		read       = anyParser(api.ParseFileReadQuery)
		write      = anyParser(api.ParseFileWriteQuery)
		watch      = anyParser(api.ParseFileWatchQuery)
		chunk      = anyParser(api.ParseUploadChunkQuery)
		stdin      = anyParser(api.ParseStdinQuery)
		stream     = anyParser(api.ParseProcessStreamQuery)
	)
	for _, tt := range []struct {
		parse func(url.Values) (any, error)
		query string
		want  any    // when it parses
		bad   string // else the parameter the error names
	}{
		{windows, "", api.WindowsQuery{}, ""},
		{windows, "app_name=term&app_name=other&x=1", api.WindowsQuery{AppName: "term"}, ""},

		{screenshot, "", api.ScreenshotRequest{}, ""},
		{screenshot, "window_id=4294967295&format=jpeg&quality=1&max_dimension=16384",
			api.ScreenshotRequest{WindowID: 1<<32 - 1, Format: "jpeg", Quality: 1, MaxDimension: 16384}, ""},
		{screenshot, "window_id=4294967296", nil, "window_id"},
		{screenshot, "window_id=-1", nil, "window_id"},
		{screenshot, "window_id=0x10", nil, "window_id"},
		{screenshot, "quality=0", nil, "quality"},
		{screenshot, "quality=101", nil, "quality"},
		{screenshot, "max_dimension=16385", nil, "max_dimension"},
		{screenshot, "max_dimension=-1", nil, "max_dimension"},
		{screenshot, "format=tiff", api.ScreenshotRequest{Format: "tiff"}, ""}, // the encoder refuses it

		{stat, "path=/etc", api.FileStatQuery{Path: "/etc"}, ""},

		{list, "path=/a", api.FileListQuery{Path: "/a", Depth: 1}, ""},
		{list, "path=/a&depth=32&hidden=1", api.FileListQuery{Path: "/a", Depth: 32, Hidden: true}, ""},
		{list, "depth=0", nil, "depth"},
		{list, "depth=33", nil, "depth"},
		{list, "hidden=yes", nil, "hidden"},

		{read, "path=/a", api.FileReadQuery{Path: "/a"}, ""},
		{read, "path=/a&offset=0", api.FileReadQuery{Path: "/a", Part: true, Length: -1}, ""},
		{read, "path=/a&length=0", api.FileReadQuery{Path: "/a", Part: true}, ""},
		{read, "offset=9223372036854775807&length=5", api.FileReadQuery{Part: true, Offset: 1<<63 - 1, Length: 5}, ""},
		{read, "offset=-1", nil, "offset"},
		{read, "offset=9223372036854775808", nil, "offset"},
		{read, "length=x", nil, "length"},

		{write, "path=/a&mode=0o600", api.FileWriteQuery{Path: "/a", Mode: "0o600"}, ""}, // files checks the mode

		{watch, "path=/a", api.FileWatchQuery{Path: "/a"}, ""},
		{watch, "path=/a&recursive=true", api.FileWatchQuery{Path: "/a", Recursive: true}, ""},
		{watch, "recursive=2", nil, "recursive"},

		{chunk, "offset=0", api.UploadChunkQuery{}, ""},
		{chunk, "offset=4611686018427387904", api.UploadChunkQuery{Offset: 1 << 62}, ""},
		{chunk, "", nil, "offset"},
		{chunk, "offset=", nil, "offset"},
		{chunk, "offset=4611686018427387905", nil, "offset"},

		{stdin, "", api.StdinQuery{}, ""},
		{stdin, "close=true", api.StdinQuery{Close: true}, ""},
		{stdin, "close=please", nil, "close"},

		{stream, "", api.ProcessStreamQuery{}, ""},
		{stream, "stdout_offset=9223372036854775807&stderr_offset=3", api.ProcessStreamQuery{StdoutOffset: 1<<63 - 1, StderrOffset: 3}, ""},
		{stream, "stdout_offset=-1", nil, "stdout_offset"},
		{stream, "stderr_offset=1.5", nil, "stderr_offset"},
	} {
		v, err := url.ParseQuery(tt.query)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tt.parse(v)
		if tt.bad != "" {
			if api.KindOf(err) != api.KindInvalidArgument || !strings.Contains(err.Error(), tt.bad) {
				t.Errorf("%q: %v (kind %s), want invalid_argument naming %s", tt.query, err, api.KindOf(err), tt.bad)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: %+v, %v; want %+v", tt.query, got, err, tt.want)
		}
	}
}

func anyParser[T any](parse func(url.Values) (T, error)) func(url.Values) (any, error) {
	return func(v url.Values) (any, error) { return parse(v) }
}

// fuzzQuery checks a parser on any query: it never panics, refuses only
// with invalid_argument naming one of its parameters, and what it reads
// its encoder writes back as the same value (and passes check, if set).
func fuzzQuery[T comparable](f *testing.F, parse func(url.Values) (T, error), encode func(T) url.Values,
	check func(url.Values, T) bool, names ...string) {
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := parse(v)
		if err != nil {
			named := false
			for _, n := range names {
				named = named || strings.Contains(err.Error(), n)
			}
			if api.KindOf(err) != api.KindInvalidArgument || !named {
				t.Fatalf("%q: %v (kind %s), want invalid_argument naming one of %v", raw, err, api.KindOf(err), names)
			}
			return
		}
		if check != nil && !check(v, q) {
			t.Fatalf("%q parsed as %+v", raw, q)
		}
		enc := encode(q).Encode()
		back, err := url.ParseQuery(enc)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := parse(back); err != nil || again != q {
			t.Fatalf("%q: %+v reads back from %q as %+v, %v", raw, q, enc, again, err)
		}
	})
}

func FuzzParseWindowsQuery(f *testing.F) {
	fuzzQuery(f, api.ParseWindowsQuery, api.WindowsQuery.Values, nil, api.QueryAppName)
}

func FuzzParseScreenshotQuery(f *testing.F) {
	fuzzQuery(f, api.ParseScreenshotQuery, api.ScreenshotRequest.Values, nil,
		api.QueryWindowID, api.QueryFormat, api.QueryQuality, api.QueryMaxDimension)
}

func FuzzParseFileStatQuery(f *testing.F) {
	fuzzQuery(f, api.ParseFileStatQuery, api.FileStatQuery.Values, nil, api.QueryPath)
}

func FuzzParseFileListQuery(f *testing.F) {
	fuzzQuery(f, api.ParseFileListQuery, api.FileListQuery.Values, nil, api.QueryPath, api.QueryDepth, api.QueryHidden)
}

func FuzzParseFileReadQuery(f *testing.F) {
	// A part is never negative, and is read only when asked for.
	check := func(v url.Values, q api.FileReadQuery) bool {
		asked := v.Get(api.QueryOffset) != "" || v.Get(api.QueryLength) != ""
		if !q.Part {
			return !asked && q.Offset == 0 && q.Length == 0
		}
		toEnd := v.Get(api.QueryLength) == ""
		return asked && q.Offset >= 0 && (toEnd && q.Length == -1 || !toEnd && q.Length >= 0)
	}
	fuzzQuery(f, api.ParseFileReadQuery, api.FileReadQuery.Values, check, api.QueryPath, api.QueryOffset, api.QueryLength)
}

func FuzzParseFileWriteQuery(f *testing.F) {
	fuzzQuery(f, api.ParseFileWriteQuery, api.FileWriteQuery.Values, nil, api.QueryPath, api.QueryMode)
}

func FuzzParseFileWatchQuery(f *testing.F) {
	fuzzQuery(f, api.ParseFileWatchQuery, api.FileWatchQuery.Values, nil, api.QueryPath, api.QueryRecursive)
}

func FuzzParseUploadChunkQuery(f *testing.F) {
	fuzzQuery(f, api.ParseUploadChunkQuery, api.UploadChunkQuery.Values, nil, api.QueryOffset)
}

func FuzzParseStdinQuery(f *testing.F) {
	fuzzQuery(f, api.ParseStdinQuery, api.StdinQuery.Values, nil, api.QueryClose)
}

func FuzzParseProcessStreamQuery(f *testing.F) {
	fuzzQuery(f, api.ParseProcessStreamQuery, api.ProcessStreamQuery.Values, nil, api.QueryStdoutOffset, api.QueryStderrOffset)
}
