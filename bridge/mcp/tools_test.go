package mcp_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/trycua/cua-spacesd/internal/proctest"
	"github.com/trycua/cua-spacesd/mcp/spacetools"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/bridge/tools"
)

func TestToolsListed(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, tl := range tools.All(nil) {
		want[tl.Name] = true
	}
	for _, tl := range res.Tools {
		if tl.Description == "" || tl.InputSchema == nil {
			t.Errorf("tool %s lacks a description or schema", tl.Name)
		}
		delete(want, tl.Name)
	}
	if len(want) != 0 {
		t.Fatalf("not listed: %v", want)
	}
}

func TestErrorEnvelopes(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	notSpacesd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html>hello</html>")
	}))
	t.Cleanup(notSpacesd.Close)
	if _, err := e.reg.Add(ctx, "wrongtoken", e.daemon.URL, "not-the-token"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.Add(ctx, "plainhttp", notSpacesd.URL, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.Add(ctx, "dup-a", e.daemon.URL, e.daemon.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.Add(ctx, "dup-b", e.daemon.URL, e.daemon.Token); err != nil {
		t.Fatal(err)
	}
	cs := e.client(t, nil)
	tests := []struct {
		name string
		tool string
		args map[string]any
		want string
	}{
		{"wrong token", "space_bash", map[string]any{"space": "wrongtoken", "command": "true"}, "unauthenticated"},
		{"add with wrong token", "add_space", map[string]any{"url": e.daemon.URL, "token": "nope", "name": "x"}, "unauthenticated"},
		{"not spacesd", "space_bash", map[string]any{"space": "plainhttp", "command": "true"}, "spacesd_not_available"},
		{"add not spacesd", "add_space", map[string]any{"url": notSpacesd.URL, "name": "y"}, "spacesd_not_available"},
		{"unknown space", "space_bash", map[string]any{"space": "nosuch", "command": "true"}, "not_found"},
		{"ambiguous", "space_bash", map[string]any{"space": "dup", "command": "true"}, "ambiguous_sandbox"},
		{"missing feature", "space_screenshot", map[string]any{"space": "s1"}, "capability_missing"},
		{"bad url", "add_space", map[string]any{"url": "ftp://x"}, "invalid_argument"},
		{"missing file", "space_read", map[string]any{"space": "s1", "path": "/nonexistent/file"}, "not_found"},
		{"timeout", "space_bash", map[string]any{"space": "s1", "command": "sleep 5", "timeout": 1}, "timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errKind(t, call(t, cs, tc.tool, tc.args)); got != tc.want {
				t.Fatalf("kind %q, want %q", got, tc.want)
			}
		})
	}
	// capability_missing names the feature and its limitation.
	r := call(t, cs, "space_screenshot", map[string]any{"space": "s1"})
	var s struct {
		Error struct{ Feature, Limitation string }
	}
	structured(t, r, &s)
	if s.Error.Feature != "screenshot" || s.Error.Limitation == "" {
		t.Fatalf("capability_missing without feature/limitation: %+v", s)
	}
	// One log line per call with tool, space, status and duration; no token.
	logs := e.logText()
	if !strings.Contains(logs, `"tool":"space_bash"`) || !strings.Contains(logs, `"status":"unauthenticated"`) || !strings.Contains(logs, `"duration_ms"`) {
		t.Fatalf("log lines missing fields:\n%s", logs)
	}
	if strings.Contains(logs, e.daemon.Token) || strings.Contains(logs, "not-the-token") || strings.Contains(logs, "sleep 5") {
		t.Fatalf("a token or an argument leaked into the log:\n%s", logs)
	}
}

func TestSpaces(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	r := call(t, cs, "add_space", map[string]any{"url": e.daemon.URL, "token": e.daemon.Token, "name": "second"})
	if r.IsError {
		t.Fatal(text(r))
	}
	r = call(t, cs, "list_spaces", nil)
	var l struct {
		Spaces []tools.SpaceView
	}
	structured(t, r, &l)
	if len(l.Spaces) != 2 || !l.Spaces[0].Online || !l.Spaces[1].Online || len(l.Spaces[0].Features) == 0 {
		t.Fatalf("list_spaces: %+v", l)
	}
	if r := call(t, cs, "space_capabilities", map[string]any{"space": "sec"}); r.IsError || !strings.Contains(text(r), "cua-spacesd") {
		t.Fatalf("space_capabilities: %s", text(r))
	}
	if r := call(t, cs, "remove_space", map[string]any{"space": "second"}); r.IsError {
		t.Fatal(text(r))
	}
	if got := errKind(t, call(t, cs, "space_capabilities", map[string]any{"space": "second"})); got != "not_found" {
		t.Fatalf("after remove: %s", got)
	}
}

func TestSpaceBash(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	r := call(t, cs, "space_bash", map[string]any{"space": "s1", "command": "echo out; echo err >&2; exit 3"})
	if r.IsError {
		t.Fatal(text(r))
	}
	if want := "out\n[stderr]\nerr\n[exit 3]"; text(r) != want {
		t.Fatalf("text %q, want %q", text(r), want)
	}
	var b spacetools.BashResult
	structured(t, r, &b)
	if b.Stdout != "out\n" || b.Stderr != "err\n" || b.ExitCode != 3 || b.TimedOut || b.ProcessID != "" {
		t.Fatalf("structured %+v", b)
	}
}

// A command that leaves a background child running says so, with the
// process id that lists and stops it.
func TestSpaceBashBackground(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	r := call(t, cs, "space_bash", map[string]any{"space": "s1", "command": "sleep 300 >/dev/null 2>&1 & echo started"})
	if r.IsError {
		t.Fatal(text(r))
	}
	var b spacetools.BashResult
	structured(t, r, &b)
	if b.ProcessID == "" || len(b.Background) != 1 || !strings.Contains(text(r), "[background: 1 process left running") {
		t.Fatalf("a background child was not reported: %+v\n%s", b, text(r))
	}
	s := call(t, cs, "space_process_signal", map[string]any{"space": "s1", "id": b.ProcessID, "signal": "KILL"})
	if s.IsError {
		t.Fatalf("stopping the background child: %s", text(s))
	}
	eventually(t, "the background sleep gone", func() bool {
		return syscall.Kill(b.Background[0], 0) != nil
	})
}

func TestWriteRead(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	dir := t.TempDir()
	p := filepath.Join(dir, "hello.txt")
	content := "héllo\nworld\n"
	r := call(t, cs, "space_write", map[string]any{"space": "s1", "path": p, "content": content})
	sum := sha256.Sum256([]byte(content))
	want := "wrote " + p + " (" + strconv.Itoa(len(content)) + " bytes, sha256 " + hex.EncodeToString(sum[:]) + " verified in Space)"
	if r.IsError || text(r) != want {
		t.Fatalf("space_write: %q, want %q", text(r), want)
	}
	if r := call(t, cs, "space_read", map[string]any{"space": "s1", "path": p}); r.IsError || text(r) != content {
		t.Fatalf("space_read: %q", text(r))
	}
	if r := call(t, cs, "space_read", map[string]any{"space": "s1", "path": p, "offset": 7, "length": 5}); r.IsError || text(r) != "world" {
		t.Fatalf("space_read range: %q", text(r))
	}
	if err := os.WriteFile(filepath.Join(dir, "bin"), []byte{0xff, 0xfe, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := call(t, cs, "space_read", map[string]any{"space": "s1", "path": filepath.Join(dir, "bin")}); r.IsError || !strings.Contains(text(r), "base64") || !strings.Contains(text(r), "//4A") {
		t.Fatalf("binary read: %q", text(r))
	}
	r = call(t, cs, "space_ls", map[string]any{"space": "s1", "path": dir})
	if r.IsError || !strings.Contains(text(r), "hello.txt") {
		t.Fatalf("space_ls: %q", text(r))
	}
}

func TestUploadDownload(t *testing.T) {
	e := newEnv(t)
	var progress atomic.Int64
	cs := e.client(t, &sdk.ClientOptions{ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) {
		progress.Add(1)
	}})
	local := t.TempDir()
	src := filepath.Join(local, "big.bin")
	data := make([]byte, 20<<20+123)
	rand.Read(data)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	wantSum := hex.EncodeToString(sum[:])
	space := t.TempDir()
	withToken := func(name string, args map[string]any) *sdk.CallToolResult {
		p := &sdk.CallToolParams{Name: name, Arguments: args}
		p.SetProgressToken("tok-" + name)
		r, err := cs.CallTool(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := withToken("upload", map[string]any{"space": "s1", "path": src, "dest": space + "/"})
	if r.IsError {
		t.Fatal(text(r))
	}
	var up tools.TransferResult
	structured(t, r, &up)
	if up.SHA256 != wantSum || !up.Verified || up.Dest != filepath.Join(space, "big.bin") || up.Bytes != int64(len(data)) {
		t.Fatalf("upload %+v", up)
	}
	got, err := os.ReadFile(up.Dest)
	if err != nil || sha256.Sum256(got) != sum {
		t.Fatalf("uploaded file differs: %v", err)
	}
	if progress.Load() == 0 {
		t.Fatal("no progress notification for upload")
	}
	// download twice into the same folder: the second never overwrites.
	if err := os.Mkdir(filepath.Join(local, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, wantName := range []string{"big.bin", "big (1).bin"} {
		progress.Store(0)
		r := withToken("download", map[string]any{"space": "s1", "path": up.Dest, "dest": filepath.Join(local, "out")})
		if r.IsError {
			t.Fatal(text(r))
		}
		var dn tools.TransferResult
		structured(t, r, &dn)
		if dn.SHA256 != wantSum || !dn.Verified || filepath.Base(dn.Dest) != wantName {
			t.Fatalf("download %d: %+v", i, dn)
		}
		got, err := os.ReadFile(dn.Dest)
		if err != nil || sha256.Sum256(got) != sum {
			t.Fatalf("downloaded file differs: %v", err)
		}
		if progress.Load() == 0 {
			t.Fatal("no progress notification for download")
		}
	}
	// A folder both ways.
	tree := filepath.Join(local, "tree")
	os.MkdirAll(filepath.Join(tree, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(tree, "a", "one.txt"), []byte("1"), 0o644)
	os.WriteFile(filepath.Join(tree, "a", "b", "two.txt"), []byte("22"), 0o600)
	os.WriteFile(filepath.Join(tree, "empty"), nil, 0o644)
	r = withToken("upload", map[string]any{"space": "s1", "path": tree, "dest": filepath.Join(space, "tree")})
	if r.IsError {
		t.Fatal(text(r))
	}
	structured(t, r, &up)
	if up.Kind != "folder" || up.Files != 3 || up.Bytes != 3 {
		t.Fatalf("folder upload %+v", up)
	}
	r = withToken("download", map[string]any{"space": "s1", "path": filepath.Join(space, "tree"), "dest": tree})
	if r.IsError {
		t.Fatal(text(r))
	}
	var dn tools.TransferResult
	structured(t, r, &dn)
	if dn.Dest != filepath.Join(local, "tree (1)") && dn.Dest != filepath.Join(tree, "tree") {
		t.Fatalf("folder download landed at %s", dn.Dest)
	}
	if dn.SHA256 != up.SHA256 || dn.Files != 3 {
		t.Fatalf("folder manifest differs: up %+v down %+v", up, dn)
	}
	if b, _ := os.ReadFile(filepath.Join(dn.Dest, "a", "b", "two.txt")); string(b) != "22" {
		t.Fatalf("two.txt = %q", b)
	}
}

// TestCancelStopsBash cancels a running space_bash (the SDK client sends
// notifications/cancelled) and checks the process really died in the Space.
func TestCancelStopsBash(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "space_bash", Arguments: map[string]any{
			"space": "s1", "command": "sleep 300 & echo $! > " + pidFile + ".tmp; mv " + pidFile + ".tmp " + pidFile + "; wait",
		}})
		done <- err
	}()
	var pid int
	eventually(t, "the command writes its pid", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled call returned no error")
	}
	eventually(t, "sleep 300 is killed in the Space", func() bool {
		return !proctest.Alive(pid)
	})
	// The session still works.
	if r := call(t, cs, "space_bash", map[string]any{"space": "s1", "command": "echo ok"}); r.IsError {
		t.Fatal(text(r))
	}
}

// Every client the tools use comes from the registry's factory: the probe of
// add_space and list_spaces as much as a tool's call. The Space's URL cannot
// be dialled; only the factory's dialer (as a relay's will) reaches it.
func TestToolsReachSpacesThroughTheFactory(t *testing.T) {
	var daemonAddr atomic.Value
	var dials atomic.Int64
	e := newEnvWith(t, envOptions{clients: func(en registry.Entry) (*client.Client, error) {
		return client.New(en.URL, en.Token, client.WithDialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
			dials.Add(1)
			var nd net.Dialer
			return nd.DialContext(ctx, network, daemonAddr.Load().(string))
		}))
	}})
	daemonAddr.Store(strings.TrimPrefix(e.daemon.URL, "http://"))
	cs := e.client(t, nil)
	r := call(t, cs, "add_space", map[string]any{"url": "http://127.0.0.1:1", "token": e.daemon.Token, "name": "far"})
	if r.IsError {
		t.Fatalf("add_space probed around the factory: %s", text(r))
	}
	var listed struct{ Spaces []tools.SpaceView }
	structured(t, call(t, cs, "list_spaces", map[string]any{}), &listed)
	for _, v := range listed.Spaces {
		if !v.Online {
			t.Errorf("list_spaces probed %s around the factory: %s", v.Space, v.Error)
		}
	}
	if r := call(t, cs, "space_bash", map[string]any{"space": "far", "command": "echo hi"}); r.IsError || !strings.Contains(text(r), "hi") {
		t.Fatalf("space_bash: %s", text(r))
	}
	if dials.Load() == 0 {
		t.Fatal("the factory's dialer was never used")
	}
}
