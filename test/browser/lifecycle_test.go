package browser_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp/kb"
	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/internal/nstest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// TestViewerViewOnlySendsNothing: a page opened with a view-only link
// opens only the control channel and sends nothing but pings and its
// pointer's presence (peer, which acts on nothing) whatever the person
// does (clicks, keys, the wheel); an input channel forced open from
// the page is closed by the daemon; and the test client's first button
// press is a later one of the token's holder, so nothing of the viewer's
// reached the display.
func TestViewerViewOnlySendsNothing(t *testing.T) {
	e := start(t, "800x600")
	xc, win := e.showWindow(t, 200, 200, quarters)
	ep := e.link(t, api.TicketRequest{ViewOnly: true})
	p := e.b.newPage(t, 800, 600, 1)
	p.connect(ep.ViewerURL)
	if !value[bool](p, `!document.getElementById('mode').hidden`) {
		t.Error("the overlay does not say view only")
	}
	x, y := pagePoint(800, 600, 800, 600, win.Bounds.X+50, win.Bounds.Y+50)
	p.click(x, y, "left", 2)
	p.click(x, y, "right", 1)
	p.typeKeys("echo leaked")
	p.typeKeys(kb.Enter)
	p.insertText("Привет")
	p.wheel(x, y, 300)
	if labels := value[[]string](p, `window.__test.labels`); strings.Join(labels, ",") != "control" {
		t.Errorf("the view-only page opened the channels %v, want control alone", labels)
	}
	for _, m := range value[[][2]string](p, `window.__test.sent`) {
		if m[0] != "control" || !strings.Contains(m[1], `"type":"ping"`) && !strings.HasPrefix(m[1], `{"type":"peer","peer":{`) {
			t.Errorf("the view-only page sent %s on %s", m[1], m[0])
		}
	}
	state := value[string](p, `new Promise((resolve) => {
		const ch = window.__test.pcs.at(-1).createDataChannel('input');
		ch.onopen = () => { try { ch.send(JSON.stringify({ type: 'button', x: 10, y: 10, button: 'left' })); } catch (e) {} };
		ch.onclose = () => resolve(ch.readyState);
	})`)
	if state != "closed" {
		t.Errorf("forced input channel ended %q", state)
	}
	marker := api.ClickRequest{X: float64(win.Bounds.X + 150), Y: float64(win.Bounds.Y + 150), Button: api.ButtonMiddle}
	if _, err := e.d.Client.Click(t.Context(), marker); err != nil {
		t.Fatal(err)
	}
	ev := desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout)
	if ev.Detail != 2 || int(ev.RootX) != int(marker.X) || int(ev.RootY) != int(marker.Y) {
		t.Fatalf("first press the client saw: button %d at (%d, %d), want the token holder's middle click: the view-only page's input reached it",
			ev.Detail, ev.RootX, ev.RootY)
	}
	p.noErrors()
}

// TestViewerExpiredLink: a link whose ticket expired shows a clear error
// that says a new link is needed, and never connects.
func TestViewerExpiredLink(t *testing.T) {
	e := start(t, "640x480")
	ep := e.link(t, api.TicketRequest{TTLSeconds: 1})
	time.Sleep(time.Until(ep.TicketExpiresAt.Add(100 * time.Millisecond)))
	p := e.b.newPage(t, 800, 600, 1)
	p.open(ep.ViewerURL)
	p.waitFor("the viewer failed", `document.body.dataset.state === 'failed'`)
	notice := value[map[string]any](p, `({
		reason: document.getElementById('notice').dataset.reason,
		shown: !document.getElementById('notice').hidden,
		text: document.getElementById('notice').innerText,
	})`)
	text, _ := notice["text"].(string)
	if notice["reason"] != "expired" || notice["shown"] != true || !strings.Contains(text, "expired") || !strings.Contains(text, "new link is needed") {
		t.Fatalf("notice %+v: want a shown notice that the link expired and a new one is needed", notice)
	}
	if n := p.framesDecoded(); n != 0 {
		t.Errorf("the expired link decoded %d frames", n)
	}
	p.noErrors()
}

// daemonProc is a daemon process of the tests (see runDaemon).
type daemonProc struct {
	t    testing.TB
	cfg  daemonConfig
	url  string
	cmd  *exec.Cmd
	logs string
}

// startDaemonProc serves display as a daemon process whose token is in
// tokenFile, on a fixed port of loopback (a restart comes back there).
func startDaemonProc(t testing.TB, display, tokenFile string) *daemonProc {
	return startDaemonProcIn(t, display, tokenFile, "")
}

// startDaemonProcIn is startDaemonProc with a state dir ("": none).
func startDaemonProcIn(t testing.TB, display, tokenFile, stateDir string) *daemonProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	d := &daemonProc{t: t, cfg: daemonConfig{Listen: addr, TokenFile: tokenFile, Display: display, StateDir: stateDir}, url: "http://" + addr,
		logs: filepath.Join(t.TempDir(), "daemon.log")}
	d.start()
	t.Cleanup(func() {
		d.kill()
		if t.Failed() {
			if b, err := os.ReadFile(d.logs); err == nil {
				t.Logf("the daemon's log:\n%s", tail(b, 6000))
			}
		}
	})
	return d
}

func (d *daemonProc) start() {
	d.t.Helper()
	self, err := os.Executable()
	if err != nil {
		d.t.Fatal(err)
	}
	cfg, _ := json.Marshal(d.cfg)
	logf, err := os.OpenFile(d.logs, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		d.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envDaemon+"="+string(cfg))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.cmd = cmd
	desktoptest.Eventually(d.t, "the daemon answering", func() bool {
		resp, err := http.Get(d.url + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// kill ends the daemon as a crash does: SIGKILL, no goodbye to anyone.
func (d *daemonProc) kill() {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Kill()
	_ = d.cmd.Wait()
	d.cmd = nil
}

// TestViewerReconnectsAfterRestart: the daemon is killed (SIGKILL) under
// a connected page after the ticket of its link expired; the page says it
// is reconnecting, and once the daemon is started again on the same token
// file it reconnects with the renewal it got while connected, and decodes
// frames again. Then the token is rotated: the daemon ends the stream,
// the renewal is refused, and the page says a new link is needed.
func TestViewerReconnectsAfterRestart(t *testing.T) {
	vp8test.Require(t)
	b := startBrowser(t)
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	tokenFile := filepath.Join(t.TempDir(), "token")
	tok := spacesdtest.Token()
	if err := os.WriteFile(tokenFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemonProc(t, display, tokenFile)
	c, err := client.New(d.url, tok)
	if err != nil {
		t.Fatal(err)
	}
	// The link must outlive the page's first connection, and die before
	// the restart: long enough for a slow browser on a loaded machine,
	// short enough that the test need not wait long for its end.
	const linkTTL = 10
	ep, err := c.StreamEndpoint(t.Context(), api.TicketRequest{TTLSeconds: linkTTL}, api.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := b.newPage(t, 800, 600, 1)
	p.connect(ep.ViewerURL)
	p.waitFor("a renewal of the ticket", fmt.Sprintf(`JSON.parse(sessionStorage.getItem('cua-viewer-link')).ticket !== %s`, jsString(ep.Ticket)))
	time.Sleep(time.Until(ep.TicketExpiresAt.Add(time.Second))) // the link's own ticket is dead now

	d.kill()
	p.waitFor("the viewer reconnecting", `document.body.dataset.state === 'reconnecting'`)
	d.start()
	p.waitFor("the viewer connected again", `document.body.dataset.state === 'connected' && window.__test.pcs.length > 1`)
	p.waitFrames("frames decoded after the restart", 0)

	if err := os.WriteFile(tokenFile, []byte(spacesdtest.Token()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.waitFor("the viewer failed", `document.body.dataset.state === 'failed'`)
	notice := value[map[string]string](p, `({
		reason: document.getElementById('notice').dataset.reason,
		text: document.getElementById('notice').innerText,
	})`)
	if notice["reason"] != "invalid" || !strings.Contains(notice["text"], "new link is needed") {
		t.Fatalf("after the rotation: notice %+v, want that the link is no longer valid and a new one is needed", notice)
	}
	p.noErrors()
}

// TestViewerReconnectsAfterNetworkDrop: lo goes down under a connected
// page (every packet between the page and the daemon is lost), and comes
// back; the page notices, says so, and reconnects by itself.
func TestViewerReconnectsAfterNetworkDrop(t *testing.T) {
	if !nstest.Inside() {
		t.Skip("needs the tests' own network namespace, whose lo it takes down")
	}
	e := start(t, "640x480")
	ep := e.link(t, api.TicketRequest{})
	p := e.b.newPage(t, 800, 600, 1)
	p.connect(ep.ViewerURL)

	if err := nstest.SetLoopback(false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nstest.SetLoopback(true) })
	p.waitFor("the viewer reconnecting", `document.body.dataset.state === 'reconnecting'`)
	if err := nstest.SetLoopback(true); err != nil {
		t.Fatal(err)
	}
	p.waitFor("the viewer connected again", `document.body.dataset.state === 'connected' && window.__test.pcs.length > 1`)
	p.waitFrames("frames decoded after the drop", 0)
	p.noErrors()
}

// TestViewerSurvivesAFrozenTab: a tab whose scripts stop for a while (a
// hidden tab's timers are slowed, a frozen one's stopped) misses no pong
// of the Space meanwhile, as it sent no ping: once it runs again it keeps
// its connection rather than drop it as dead. A new link opened in the
// same tab (only the fragment changes) is then followed.
func TestViewerSurvivesAFrozenTab(t *testing.T) {
	e := start(t, "640x480")
	ep := e.link(t, api.TicketRequest{})
	p := e.b.newPage(t, 800, 600, 1)
	p.connect(ep.ViewerURL)
	call(p, cdppage.SetWebLifecycleState, cdppage.SetWebLifecycleStateParams{State: cdppage.SetWebLifecycleStateStateFrozen})
	time.Sleep(6 * time.Second) // longer than the 4 s without a pong that ends a session
	call(p, cdppage.SetWebLifecycleState, cdppage.SetWebLifecycleStateParams{State: cdppage.SetWebLifecycleStateStateActive})
	pings := value[int](p, `window.__test.sent.length`)
	p.waitFor("two more pings sent", fmt.Sprintf(`window.__test.sent.length >= %d`, pings+2))
	if n, state := value[int](p, `window.__test.pcs.length`), p.state(); n != 1 || state != "connected" {
		t.Fatalf("after the tab ran again: %d peer connections, state %s; want the first one, connected", n, state)
	}

	other := e.link(t, api.TicketRequest{ViewOnly: true})
	p.navigate(other.ViewerURL)
	p.waitFor("the new link followed", `!!document.body && document.body.dataset.state === 'connected' && !document.getElementById('mode').hidden`)
	p.noErrors()
}
