package desktop_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jezek/xgb"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// placeholderDisplay is the display number of the cookie the server reads
// at start: the X server loads every cookie of its -auth file, whatever
// display an entry names, and no test server takes this number.
const placeholderDisplay = ":59535"

// xauthAdd adds a cookie for display to the Xauthority file with the real
// xauth tool, as vncserver and Xvfb setups do.
func xauthAdd(t *testing.T, file, display, cookie string) {
	t.Helper()
	if out, err := exec.Command("xauth", "-f", file, "add", display, ".", cookie).CombinedOutput(); err != nil {
		t.Fatalf("xauth -f %s add %s: %v\n%s", file, display, err, out)
	}
}

func newCookie(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func displayNumber(t *testing.T, display string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(display, ":"))
	if err != nil {
		t.Fatalf("display %q: %v", display, err)
	}
	return n
}

// authDisplay starts an Xvfb that requires a cookie (-auth) and returns
// its display, its cookie and an Xauthority file holding the cookie under
// its display number, after another display's entry with another cookie.
func authDisplay(t *testing.T) (display, cookie, xauthority string) {
	t.Helper()
	desktoptest.Require(t, "xauth")
	dir := t.TempDir()
	cookie = newCookie(t)
	server := filepath.Join(dir, "server.auth")
	xauthAdd(t, server, placeholderDisplay, cookie)
	display = desktoptest.StartVirtual(t, desktoptest.Options{Size: "320x240", NoWindowManager: true, Xauthority: server}).Display()
	xauthority = filepath.Join(dir, "Xauthority")
	n := displayNumber(t, display)
	xauthAdd(t, xauthority, ":"+strconv.Itoa(n+1), newCookie(t))
	xauthAdd(t, xauthority, display, cookie)
	return display, cookie, xauthority
}

// screenshotOf takes a screenshot of display as a fresh Desktop would.
func screenshotOf(ctx context.Context, opts desktop.Options) (api.ScreenshotInfo, error) {
	d := desktop.New(opts)
	defer d.Close()
	_, info, err := d.Screenshot(ctx, api.ScreenshotRequest{})
	return info, err
}

// TestXauthority connects to an X server that requires a cookie, as the
// vncserver and Xvfb -auth of real Space images do: the daemon finds the
// cookie of the display's number in the Xauthority file (given, from
// $XAUTHORITY or from $HOME/.Xauthority) and is refused without it, with
// a message naming the file.
func TestXauthority(t *testing.T) {
	display, _, xauthority := authDisplay(t)
	n := displayNumber(t, display)
	ctx := context.Background()

	t.Run("given file", func(t *testing.T) {
		if info, err := screenshotOf(ctx, desktop.Options{Display: display, Xauthority: xauthority}); err != nil || info.Width != 320 {
			t.Fatalf("screenshot with the cookie: %+v, %v", info, err)
		}
	})
	t.Run("XAUTHORITY", func(t *testing.T) {
		t.Setenv("XAUTHORITY", xauthority)
		if _, err := screenshotOf(ctx, desktop.Options{Display: display}); err != nil {
			t.Fatalf("screenshot with XAUTHORITY=%s: %v", xauthority, err)
		}
	})
	t.Run("HOME", func(t *testing.T) {
		home := t.TempDir()
		b, err := os.ReadFile(xauthority)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".Xauthority"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("XAUTHORITY", "")
		t.Setenv("HOME", home)
		if _, err := screenshotOf(ctx, desktop.Options{Display: display}); err != nil {
			t.Fatalf("screenshot with $HOME/.Xauthority: %v", err)
		}
	})

	refused := []struct {
		name, file, note string
	}{
		{"no file", filepath.Join(t.TempDir(), "missing"), "does not exist"},
		{"another display's cookie only", onlyOtherDisplay(t, n), "no MIT-MAGIC-COOKIE-1 for display " + strconv.Itoa(n)},
		{"wrong cookie", wrongCookie(t, display), "sent the MIT-MAGIC-COOKIE-1"},
	}
	for _, c := range refused {
		t.Run("refused: "+c.name, func(t *testing.T) {
			_, err := screenshotOf(ctx, desktop.Options{Display: display, Xauthority: c.file})
			ae := api.AsError(err)
			if ae == nil || ae.Kind != api.KindCapabilityMissing {
				t.Fatalf("screenshot without the cookie: want capability_missing, got %v", err)
			}
			for _, want := range []string{display, "refused", c.file, c.note} {
				if !strings.Contains(ae.Error(), want) {
					t.Errorf("refusal %q does not say %q", ae.Error(), want)
				}
			}
		})
	}

	// Why the daemon looks the cookie up itself: xgb's NewConnNet looks
	// for an entry of an empty display name, so on the same socket and the
	// same file it is refused.
	t.Run("xgb alone", func(t *testing.T) {
		t.Setenv("XAUTHORITY", xauthority)
		sock, err := net.Dial("unix", "/tmp/.X11-unix/X"+strconv.Itoa(n))
		if err != nil {
			t.Fatal(err)
		}
		defer sock.Close()
		c, err := xgb.NewConnNet(sock)
		if err == nil {
			c.Close()
			t.Fatal("xgb.NewConnNet was let in without the display's cookie; the test proves nothing")
		}
	})
}

// onlyOtherDisplay is an Xauthority file whose one entry is for display n+1.
func onlyOtherDisplay(t *testing.T, n int) string {
	f := filepath.Join(t.TempDir(), "other")
	xauthAdd(t, f, ":"+strconv.Itoa(n+1), newCookie(t))
	return f
}

// wrongCookie is an Xauthority file with a cookie for display that the
// server does not know.
func wrongCookie(t *testing.T, display string) string {
	f := filepath.Join(t.TempDir(), "wrong")
	xauthAdd(t, f, display, newCookie(t))
	return f
}

// TestDisplayForms reaches one cookie-protected server through every form
// of display name xgb accepts: the local socket (also through its abstract
// name when the socket file is gone), an explicit socket path, and TCP on
// loopback (a forwarder on 127.0.0.1 to the server's socket, so that the
// test server need not listen on every interface), where the local
// hostname's cookie applies as libxcb has it.
func TestDisplayForms(t *testing.T) {
	display, cookie, xauthority := authDisplay(t)
	n := displayNumber(t, display)
	socket := "/tmp/.X11-unix/X" + strconv.Itoa(n)
	ctx := context.Background()

	dir := t.TempDir()
	if err := os.Symlink(socket, filepath.Join(dir, "xsock:"+strconv.Itoa(n))); err != nil {
		t.Fatal(err)
	}
	tcp := forwardTCP(t, socket)
	// A loopback TCP display is this host's display 1xxx to xauth.
	xauthAdd(t, xauthority, ":"+strconv.Itoa(tcp), cookie)

	ok := []string{
		display, display + ".0", "unix:" + strconv.Itoa(n), "unix/unix:" + strconv.Itoa(n),
		filepath.Join(dir, "xsock") + ":" + strconv.Itoa(n),
		"127.0.0.1:" + strconv.Itoa(tcp), "tcp/127.0.0.1:" + strconv.Itoa(tcp), "inet/127.0.0.1:" + strconv.Itoa(tcp),
	}
	for _, name := range ok {
		if info, err := screenshotOf(ctx, desktop.Options{Display: name, Xauthority: xauthority}); err != nil || info.Width != 320 {
			t.Errorf("display %q: %+v, %v", name, info, err)
		}
	}
	bad := map[string]string{
		display + ".1":                "no screen 1",
		"decnet::" + strconv.Itoa(n):  "DECnet",
		"foo/host:" + strconv.Itoa(n): "unknown protocol",
		strconv.Itoa(n):               "no ':'",
		":x":                          "not a decimal number",
	}
	for name, want := range bad {
		_, err := screenshotOf(ctx, desktop.Options{Display: name, Xauthority: xauthority})
		if ae := api.AsError(err); ae == nil || ae.Kind != api.KindCapabilityMissing || !strings.Contains(ae.Error(), want) {
			t.Errorf("display %q: want capability_missing saying %q, got %v", name, want, err)
		}
	}

	// The server also listens on the abstract socket of the same name,
	// which is what is left when the socket file is removed (this test's
	// own server's file).
	if err := os.Remove(socket); err != nil {
		t.Fatal(err)
	}
	if _, err := screenshotOf(ctx, desktop.Options{Display: display, Xauthority: xauthority}); err != nil {
		t.Fatalf("display %s without its socket file (abstract socket): %v", display, err)
	}
}

// forwardTCP listens on a free port 6000+M of 127.0.0.1 and forwards each
// connection to the unix socket; it returns M.
func forwardTCP(t *testing.T, socket string) int {
	t.Helper()
	var ln net.Listener
	m := 0
	for m = 1000; m < 2000; m++ {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(6000+m)); err == nil {
			break
		}
	}
	if ln == nil {
		t.Fatal("no free port in 7000-7999 on 127.0.0.1")
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("unix", socket)
			if err != nil {
				in.Close()
				continue
			}
			track(in)
			track(out)
			wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				_, _ = io.Copy(dst, src)
				dst.Close()
				src.Close()
			}
			go pipe(out, in)
			go pipe(in, out)
		}
	}()
	return m
}
