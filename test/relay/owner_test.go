package relay_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jezek/xgb/xproto"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// TestOwnerDrivesSpaceThroughRelay: a Space attached to the relay is all
// its owner's from the relay, as relay:<computer>, through the bridge's
// tools and CLI: a command, a PTY session, 256 MiB each way, a screenshot
// and a click. Another user reaches none of it.
func TestOwnerDrivesSpaceThroughRelay(t *testing.T) {
	desktoptest.Require(t)
	display := desktoptest.Start(t, desktoptest.Options{Size: "1024x768"})
	w := newWorld(t)
	alice := newBridge(t, w, w.user("alice"))
	s := startSpace(t, display)
	alice.addSpace(t, "box", s)

	r := alice.register(t, "box")
	if r.Space != "box" || r.RelaySpace != "relay:box" || r.Machine != "box" || !r.Online || r.URL == "" {
		t.Fatalf("relay_register_space answered %+v, want box as relay:box, online", r)
	}
	first := s.waitConnected(t, 0)
	// Registering again changes nothing: the same computer, the same session.
	if again := alice.register(t, "box"); again != r {
		t.Fatalf("a second relay_register_space answered %+v, want %+v", again, r)
	}
	if st, err := s.d.RelayStatus(t.Context()); err != nil || st.ConnectedSinceMS != first.ConnectedSinceMS {
		t.Fatalf("a second registration replaced the session: %+v (was %+v), %v", st, first, err)
	}

	t.Run("list", func(t *testing.T) {
		var list struct {
			Spaces []struct {
				Space  string `json:"space"`
				Online bool   `json:"online"`
			} `json:"spaces"`
		}
		alice.call(t, "list_spaces", map[string]any{}, &list)
		found := false
		for _, sp := range list.Spaces {
			if sp.Space == "relay:box" {
				found = sp.Online
			}
		}
		if !found {
			t.Fatalf("list_spaces does not show relay:box online: %+v", list.Spaces)
		}
		out, errOut, code := alice.cli(t, "space", "ls")
		if code != 0 || !strings.Contains(out, "relay:box") {
			t.Fatalf("space ls: exit %d, %q %q: want relay:box listed", code, out, errOut)
		}
	})

	t.Run("bash", func(t *testing.T) {
		var res struct {
			Stdout   string `json:"stdout"`
			ExitCode int    `json:"exit_code"`
		}
		alice.call(t, "space_bash", map[string]any{"space": "relay:box", "command": "echo tool-$((6*7)); hostname"}, &res)
		if res.ExitCode != 0 || !strings.HasPrefix(res.Stdout, "tool-42\n") {
			t.Fatalf("space_bash through the relay: %+v", res)
		}
		out, errOut, code := alice.cli(t, "exec", "relay:box", "--", "sh", "-c", "echo cli-$((6*7))")
		if code != 0 || out != "cli-42\n" {
			t.Fatalf("cua-bridge exec relay:box: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})

	t.Run("pty", func(t *testing.T) {
		c, _, err := alice.reg.Client("relay:box")
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		p, err := c.Start(ctx, api.StartRequest{Command: api.Command{Argv: []string{"sh"}}, PTY: &api.PTYSize{Cols: 80, Rows: 24}})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Signal(context.Background(), p.ID, "KILL") }()
		st, err := c.StreamProcess(ctx, p.ID, 0, 0)
		if err != nil {
			t.Fatalf("PTY stream through the relay: %v", err)
		}
		defer st.Close()
		if err := st.Send(api.StreamInput{Type: "stdin", Data: []byte("echo pty-$((6*7))\n")}); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		for !strings.Contains(got.String(), "pty-42") {
			ev, err := st.Next()
			if err != nil {
				t.Fatalf("PTY stream: %v after %q", err, got.String())
			}
			got.Write(ev.Data)
		}
	})

	t.Run("transfer", func(t *testing.T) {
		dir := t.TempDir()
		src := filepath.Join(dir, "big.bin")
		want := writeRandom(t, src, 256<<20)
		before := w.relay.Server.Metrics().DataConns.Load()
		if out, errOut, code := alice.cli(t, "cp", src, "relay:box:"+filepath.Join(s.stateDir, "big.bin")); code != 0 {
			t.Fatalf("cp up through the relay: exit %d, %q %q", code, out, errOut)
		}
		back := filepath.Join(dir, "back.bin")
		if out, errOut, code := alice.cli(t, "cp", "relay:box:"+filepath.Join(s.stateDir, "big.bin"), back); code != 0 {
			t.Fatalf("cp down through the relay: exit %d, %q %q", code, out, errOut)
		}
		if got := sha256File(t, back); got != want {
			t.Fatalf("256 MiB came back with sha256 %x, sent %x", got, want)
		}
		if w.relay.Server.Metrics().DataConns.Load() == before {
			t.Fatal("the transfers went over the control session: no data connection was used")
		}
	})

	t.Run("screenshot and click", func(t *testing.T) {
		const red = 0xd03030
		xc := desktoptest.NewXClient(t, display, "relay-e2e", 300, 200, []desktoptest.Fill{{X: 0, Y: 0, W: 300, H: 200, RGB: red}})
		var wins struct {
			Windows []struct {
				ID     uint32   `json:"window_id"`
				Title  string   `json:"title"`
				Bounds api.Rect `json:"bounds"`
			} `json:"windows"`
		}
		var win *api.Rect
		var winID uint32
		desktoptest.Eventually(t, "the window is listed through the relay", func() bool {
			alice.call(t, "list_space_windows", map[string]any{"space": "relay:box"}, &wins)
			for _, x := range wins.Windows {
				if x.Title == "relay-e2e" {
					win, winID = &x.Bounds, x.ID
					return true
				}
			}
			return false
		})
		res := alice.callRaw(t, "space_screenshot", map[string]any{"space": "relay:box", "window_id": winID})
		if res.IsError {
			t.Fatalf("space_screenshot: %v", res.Content)
		}
		img := decodePNG(t, res)
		if c := img.At(150, 100); !desktoptest.NearRGB(rgbOf(c), red) {
			t.Fatalf("the screenshot through the relay shows %v at the window's centre, want the red fill", c)
		}
		x, y := win.X+150, win.Y+100
		alice.call(t, "space_click", map[string]any{"space": "relay:box", "x": x, "y": y}, nil)
		ev := desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout)
		if int(ev.RootX) != x || int(ev.RootY) != y {
			t.Fatalf("the click through the relay landed at (%d, %d), want (%d, %d)", ev.RootX, ev.RootY, x, y)
		}
	})

	t.Run("another user", func(t *testing.T) {
		bobToken := w.user("bob")
		bob := newBridge(t, w, bobToken)
		res := bob.callRaw(t, "space_bash", map[string]any{"space": "relay:box", "command": "echo nope"})
		if kind := errorKind(t, res); kind != api.KindNotFound {
			t.Fatalf("bob's space_bash on alice's computer answered %q (kind %q), want not_found", toolText(res), kind)
		}
		// And straight at the relay, with bob's token: nothing of alice's.
		rc, err := relayapi.New(w.relayURL(), bobToken, relayapi.Trust{CAFile: w.caFile})
		if err != nil {
			t.Fatal(err)
		}
		list, err := rc.Computers(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 0 {
			t.Fatalf("bob's computers: %+v, want none", list)
		}
		if _, err := rc.Computer(t.Context(), "box"); api.KindOf(err) != api.KindNotFound {
			t.Fatalf("bob's GET of alice's computer: %v, want not_found", err)
		}
	})
}

// writeRandom writes n random bytes to path and answers their sha256.
func writeRandom(t testing.TB, path string, n int64) [32]byte {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), rand.Reader, n); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

func sha256File(t testing.TB, path string) [32]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

// errorKind is the kind of a failed tool call ("" when it did not fail).
func errorKind(t testing.TB, r *sdk.CallToolResult) api.Kind {
	t.Helper()
	if !r.IsError {
		return ""
	}
	var s struct{ Error struct{ Kind api.Kind } }
	raw, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("error answer %s: %v", raw, err)
	}
	return s.Error.Kind
}

func toolText(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func decodePNG(t testing.TB, r *sdk.CallToolResult) image.Image {
	t.Helper()
	for _, c := range r.Content {
		if ic, ok := c.(*sdk.ImageContent); ok {
			img, err := png.Decode(bytes.NewReader(ic.Data))
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			return img
		}
	}
	t.Fatalf("screenshot answered no image: %v", r.Content)
	return nil
}

// rgbOf is c as 0xRRGGBB.
func rgbOf(c color.Color) uint32 {
	r, g, b, _ := c.RGBA()
	return r>>8<<16 | g>>8<<8 | b>>8
}
