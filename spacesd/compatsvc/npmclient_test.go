package compatsvc_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// The published client's test package: its lockfile pins @trycua/computer.
const nodeClientDir = "../../test/computer-server"

// nodeCallTimeout bounds one call of the driver: generous for a loaded
// machine (the 20 MB file is 40 calls), no performance claim.
const nodeCallTimeout = 3 * time.Minute

// requireNodeClient skips the test (fails it under CI=true, which installs
// both) when node or the pinned client is missing.
func requireNodeClient(t *testing.T) {
	t.Helper()
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(nodeClientDir, "node_modules", "@trycua", "computer", "package.json")); err != nil {
		missing = "the pinned @trycua/computer is not installed (run npm ci in test/computer-server)"
	}
	if missing == "" {
		return
	}
	testenv.Missing(t, "%s", missing)
}

// nodeClient is the driver (test/computer-server/driver.mjs) running the
// published client in a node process.
type nodeClient struct {
	t      *testing.T
	in     io.WriteCloser
	out    chan driverAnswer
	stderr *spacesdtest.Logs
	next   int
}

type driverAnswer struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *string         `json:"error"`
}

func startNodeClient(t *testing.T, caFile string) *nodeClient {
	t.Helper()
	cmd := exec.Command("node", "driver.mjs")
	cmd.Dir = nodeClientDir
	// The client's telemetry stays off, and its installation id lands in
	// the test's home rather than the user's.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "CUA_TELEMETRY=off", "CUA_TELEMETRY_DISABLED=1")
	if caFile != "" {
		cmd.Env = append(cmd.Env, "NODE_EXTRA_CA_CERTS="+caFile)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	nc := &nodeClient{t: t, in: in, out: make(chan driverAnswer, 1), stderr: &spacesdtest.Logs{}}
	cmd.Stderr = nc.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(nc.out)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "@@cua-driver ")
			if !ok {
				continue // the client's own log lines
			}
			var a driverAnswer
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Errorf("driver answered %q: %v", line, err)
				return
			}
			nc.out <- a
		}
	}()
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second): // it ignores stdin's end
			_ = cmd.Process.Kill()
			<-done
		}
		wg.Wait()
	})
	return nc
}

// do sends one request and waits for its answer.
func (nc *nodeClient) do(req map[string]any) driverAnswer {
	nc.t.Helper()
	nc.next++
	req["id"] = nc.next
	b, _ := json.Marshal(req)
	if _, err := nc.in.Write(append(b, '\n')); err != nil {
		nc.t.Fatalf("driver: %v\n%s", err, nc.stderr.String())
	}
	select {
	case a, ok := <-nc.out:
		if !ok {
			nc.t.Fatalf("the driver ended:\n%s", nc.stderr.String())
		}
		if a.ID != nc.next {
			nc.t.Fatalf("answer %d to request %d", a.ID, nc.next)
		}
		return a
	case <-time.After(nodeCallTimeout):
		nc.t.Fatalf("no answer to %.200s within %s:\n%s", b, nodeCallTimeout, nc.stderr.String())
	}
	return driverAnswer{}
}

// call calls a method of the client's interface and decodes its result.
func (nc *nodeClient) call(out any, method string, args ...any) {
	nc.t.Helper()
	a := nc.do(map[string]any{"op": "call", "method": method, "args": args})
	if a.Error != nil {
		nc.t.Fatalf("%s: %s", method, *a.Error)
	}
	if out != nil {
		if err := json.Unmarshal(a.Result, out); err != nil {
			nc.t.Fatalf("%s answered %s: %v", method, a.Result, err)
		}
	}
}

// send sends a command with the client's own sendCommand and decodes its
// answer. @trycua/computer 0.1.3, the version published, has no methods
// for the window commands (the newer source has, and sends them in this
// same shape: getApplicationWindows(app) is get_application_windows
// {app}); its public sendCommand is how its users reach them.
func (nc *nodeClient) send(out any, command string, params map[string]any) {
	nc.t.Helper()
	a := nc.do(map[string]any{"op": "send", "command": command, "params": params})
	if a.Error != nil {
		nc.t.Fatalf("%s: %s", command, *a.Error)
	}
	if out != nil {
		if err := json.Unmarshal(a.Result, out); err != nil {
			nc.t.Fatalf("%s answered %s: %v", command, a.Result, err)
		}
	}
}

// b64 is a Buffer argument or result of the driver.
type b64 struct {
	B64 string `json:"$b64"`
}

// TestPublishedNodeClient: the npm package @trycua/computer, as published
// (pinned by test/computer-server/package-lock.json), drives a real
// cua-spacesd on a real display: with a key over wss:// (a certificate of
// a CA made in the test), and without one on loopback. Each bullet of issue
// 10's "Checked by" is checked where it lands: on the disk, in a test X
// client, in an xterm, on the clipboard.
func TestPublishedNodeClient(t *testing.T) {
	requireNodeClient(t)
	desktoptest.Require(t, "xterm")
	for _, withKey := range []bool{true, false} {
		name := "ws on loopback without a key"
		if withKey {
			name = "wss with a key"
		}
		t.Run(name, func(t *testing.T) { checkNodeClient(t, withKey) })
	}
}

func checkNodeClient(t *testing.T, withKey bool) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "1024x768"})
	opts := spacesdtest.Options{Display: display, NoToken: !withKey}
	caFile, key := "", ""
	if withKey {
		ca := tlstest.NewCA(t)
		cert := ca.Issue(t, "127.0.0.1")
		caFile = ca.WriteCA(t, t.TempDir())
		opts.TLS = server.NewTLSConfig(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil })
		opts.ClientTLS = client.TLS{CAFile: caFile}
	}
	d := spacesdtest.Start(t, opts)
	key = d.Token
	ctx := t.Context()
	if _, err := d.Client.Capabilities(ctx); err != nil { // the daemon on the display before the test's X clients
		t.Fatal(err)
	}
	host := strings.TrimPrefix(strings.TrimPrefix(d.URL, "https://"), "http://")
	nc := startNodeClient(t, caFile)
	if a := nc.do(map[string]any{"op": "connect", "host": host, "key": key, "name": "space"}); a.Error != nil {
		t.Fatalf("connect: %s\n%s", *a.Error, nc.stderr.String())
	}

	// run_command.
	var out []string
	nc.call(&out, "runCommand", "echo out; echo Привет >&2")
	if len(out) != 2 || out[0] != "out\n" || out[1] != "Привет\n" {
		t.Fatalf("runCommand = %q", out)
	}

	// A file written and read back byte for byte; 20 MB goes in chunks.
	dir := t.TempDir()
	small := filepath.Join(dir, "small.txt")
	nc.call(nil, "writeText", small, "Привет ✓\n")
	var text string
	nc.call(&text, "readText", small)
	if b, _ := os.ReadFile(small); string(b) != "Привет ✓\n" || text != "Привет ✓\n" {
		t.Fatalf("writeText/readText: %q on disk, %q read", b, text)
	}
	big := make([]byte, 20<<20)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(big)
	bigPath := filepath.Join(dir, "big.bin")
	nc.call(nil, "writeBytes", bigPath, b64{base64.StdEncoding.EncodeToString(big)})
	if b, _ := os.ReadFile(bigPath); sha256.Sum256(b) != sum {
		t.Fatalf("writeBytes of 20 MB left %d bytes on disk, not the ones sent", len(b))
	}
	a := nc.do(map[string]any{"op": "call", "method": "readBytes", "args": []any{bigPath}, "digest": true})
	var digest struct {
		SHA256 string `json:"sha256"`
		Length int    `json:"length"`
	}
	if a.Error != nil || json.Unmarshal(a.Result, &digest) != nil || digest.SHA256 != hex.EncodeToString(sum[:]) || digest.Length != len(big) {
		t.Fatalf("readBytes of 20 MB: %s %v", a.Result, a.Error)
	}
	var exists bool
	nc.call(&exists, "fileExists", bigPath)
	nc.call(nil, "deleteFile", bigPath)
	if _, err := os.Stat(bigPath); !exists || err == nil {
		t.Fatalf("fileExists %v, then deleteFile left %v", exists, err)
	}

	// A screenshot that decodes as an image of the screen's size.
	var shot b64
	nc.call(&shot, "screenshot")
	raw, _ := base64.StdEncoding.DecodeString(shot.B64)
	img, err := png.Decode(bytes.NewReader(raw))
	var size api.Size
	nc.call(&size, "getScreenSize")
	if err != nil || img.Bounds().Dx() != 1024 || img.Bounds().Dy() != 768 || size != (api.Size{Width: 1024, Height: 768}) {
		t.Fatalf("screenshot: %v %v, screen size %+v; want 1024x768", img.Bounds(), err, size)
	}

	// Window listing and activation, and a click a test X client receives
	// at the right coordinates.
	title := desktoptest.RandomWord(t)
	xc := desktoptest.NewXClient(t, display, title, 300, 200, []desktoptest.Fill{{W: 300, H: 200, RGB: 0x405060}})
	var listed struct {
		Windows []uint32 `json:"windows"`
	}
	desktoptest.Eventually(t, "the client listing the test window", func() bool {
		nc.send(&listed, "get_application_windows", map[string]any{"app": title})
		return len(listed.Windows) == 1
	})
	id := listed.Windows[0]
	nc.send(nil, "activate_window", map[string]any{"window_id": id})
	var current struct {
		WindowID uint32 `json:"window_id"`
	}
	nc.send(&current, "get_current_window_id", nil)
	var name struct {
		Name string `json:"name"`
	}
	nc.send(&name, "get_window_name", map[string]any{"window_id": id})
	if current.WindowID != id || name.Name != title {
		t.Fatalf("after activate_window %d: current %d, name %q (want %q)", id, current.WindowID, name.Name, title)
	}
	var pos struct{ X, Y int }
	nc.send(&pos, "get_window_position", map[string]any{"window_id": id})
	xc.Drain()
	nc.call(nil, "leftClick", pos.X+123, pos.Y+45)
	ev := desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout)
	if ev.Detail != 1 || int(ev.RootX) != pos.X+123 || int(ev.RootY) != pos.Y+45 || ev.EventX != 123 || ev.EventY != 45 {
		t.Fatalf("leftClick(%d, %d): the client got button %d at root (%d, %d), window (%d, %d)", pos.X+123, pos.Y+45, ev.Detail, ev.RootX, ev.RootY, ev.EventX, ev.EventY)
	}

	// Typed text (with Привет ✓) that arrives in an xterm, and hotkeys:
	// shift+a types A, ctrl+d ends the input, so cat exits and the xterm
	// closes.
	typed := filepath.Join(dir, "typed.txt")
	res, err := d.Client.LaunchApp(ctx, api.LaunchRequest{
		Argv:          []string{"xterm", "-u8", "-T", "typing-" + title, "-e", "/bin/sh", "-c", "stty -echo; exec cat > " + typed},
		Env:           map[string]string{"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"},
		WaitForWindow: true,
	})
	if err != nil {
		t.Fatalf("launch xterm: %v", err)
	}
	nc.send(nil, "activate_window", map[string]any{"window_id": res.Window.WindowID})
	nc.call(nil, "typeText", "Привет ✓ ")
	nc.call(nil, "hotkey", "shift", "a")
	nc.call(nil, "pressKey", "enter")
	desktoptest.Eventually(t, "the typed line reaching cat", func() bool {
		b, _ := os.ReadFile(typed)
		return strings.HasSuffix(string(b), "\n")
	})
	nc.call(nil, "hotkey", "ctrl", "d")
	desktoptest.Eventually(t, "ctrl+d ending cat and its xterm", func() bool {
		nc.send(&listed, "get_application_windows", map[string]any{"app": "typing-" + title})
		return len(listed.Windows) == 0
	})
	if b, _ := os.ReadFile(typed); string(b) != "Привет ✓ A\n" {
		t.Fatalf("the xterm received %q, want %q", b, "Привет ✓ A\n")
	}

	// The clipboard round trip, through another X program too.
	nc.call(nil, "setClipboard", "Привет ✓ clipboard")
	if got := desktoptest.ReadClipboard(t, display); got != "Привет ✓ clipboard" {
		t.Fatalf("after setClipboard another program pastes %q", got)
	}
	var clip string
	nc.call(&clip, "copyToClipboard")
	if clip != "Привет ✓ clipboard" {
		t.Fatalf("copyToClipboard = %q", clip)
	}

	// The bus's own answers reach the client's callers: an unknown command
	// is an error naming the close names.
	if a := nc.do(map[string]any{"op": "send", "command": "screenshoot"}); a.Error == nil || !strings.Contains(*a.Error, "Did you mean: screenshot") {
		t.Fatalf("an unknown command through the client: %s %v", a.Result, a.Error)
	}

	if withKey {
		// A wrong key is refused, over /ws (the client's own interface)
		// and over /cmd.
		wrong := "not-" + key
		a := nc.do(map[string]any{"op": "wrong_key", "host": host, "key": wrong, "name": "space"})
		if a.Error == nil || !strings.Contains(*a.Error, "401") {
			t.Fatalf("a wrong key over /ws: %s %v, want a 401 refusal", a.Result, a.Error)
		}
		for k, want := range map[string]int{wrong: 401, key: 200} {
			a := nc.do(map[string]any{"op": "cmd", "host": host, "key": k, "name": "space", "body": map[string]any{"command": "version"}})
			var r struct {
				Status int    `json:"status"`
				Body   string `json:"body"`
			}
			if a.Error != nil || json.Unmarshal(a.Result, &r) != nil || r.Status != want {
				t.Fatalf("POST /cmd with the %s key: %s %v, want %d", map[bool]string{true: "right", false: "wrong"}[k == key], a.Result, a.Error, want)
			}
		}
	}
	if a := nc.do(map[string]any{"op": "close"}); a.Error != nil {
		t.Fatal(*a.Error)
	}
}
