package tunnel_test

import (
	"bytes"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/yamux"

	"github.com/trycua/cua-spacesd/relay/tunnel"
)

// A yamux session over a real WebSocket on loopback carries streams both
// ways, byte for byte, across message boundaries.
func TestYamuxOverWebSocket(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		sess, err := yamux.Server(tunnel.NewWSConn(ws), tunnel.Config(nil))
		if err != nil {
			t.Error(err)
			return
		}
		defer sess.Close()
		// Echo every stream the client opens.
		for {
			st, err := sess.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(st, st); st.Close() }()
		}
	}))
	defer srv.Close()

	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	conn := tunnel.NewWSConn(ws)
	sess, err := yamux.Client(conn, tunnel.Config(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 3<<20) // past the stream window: flow control must work
	_, _ = rand.Read(want)
	for range 3 {
		st, err := sess.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			_, _ = st.Write(want)
			_ = st.Close() // in yamux a half close (FIN): reads go on
		}()
		got, err := io.ReadAll(st)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("echo: got %d bytes, want the %d sent", len(got), len(want))
		}
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
}

// A text message is not part of a tunnel: Read refuses it.
func TestTextMessageRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		_ = ws.WriteMessage(websocket.TextMessage, []byte("hi"))
		_, _, _ = ws.ReadMessage()
	}))
	defer srv.Close()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := tunnel.NewWSConn(ws)
	defer c.Close()
	if _, err := c.Read(make([]byte, 8)); err == nil || !strings.Contains(err.Error(), "text message") {
		t.Fatalf("Read of a text message: %v, want a refusal", err)
	}
}

// A bulk connection (a data connection's) carries bytes both ways as a
// plain one does, while it yields after each message it writes.
func TestBulkWSConnCarriesBytes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		c := tunnel.NewBulkWSConn(ws)
		defer c.Close()
		_, _ = io.CopyN(c, c, 1<<20)
	}))
	defer srv.Close()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := tunnel.NewBulkWSConn(ws)
	defer c.Close()
	want := make([]byte, 1<<20)
	_, _ = rand.Read(want)
	go func() {
		for off := 0; off < len(want); off += 32 << 10 {
			if _, err := c.Write(want[off : off+32<<10]); err != nil {
				return
			}
		}
	}()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the bytes that came back are not the bytes sent")
	}
}
