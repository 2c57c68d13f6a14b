package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// liveness bounds waits for something that must happen: generous for a
// loaded CI machine, not a performance assertion.
const liveness = 20 * time.Second

// A client that goes silent (its socket open, but it reads nothing, so it
// answers no ping) is dropped after the idle timeout: the stream's context
// ends and the handler returns, with no goroutine left behind.
func TestStreamDropsASilentClient(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ended := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st, err := httpapi.Upgrade(w, r, httpapi.StreamOptions{PingInterval: 50 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
		if err != nil {
			ended <- err
			return
		}
		<-st.Context().Done()
		st.Close(websocket.CloseGoingAway, "")
		ended <- context.Cause(st.Context())
	}))
	defer srv.Close()
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the stream ended without a cause")
		}
	case <-time.After(liveness):
		t.Fatal("a silent client was never dropped")
	}
}

// The client's messages reach OnMessage in order; a failing one is answered
// with its error event and the stream goes on; the daemon's messages arrive.
// (An error answer and the handler's own messages are not ordered.)
func TestStreamMessagesBothWays(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := make(chan string, 8)
		st, err := httpapi.Upgrade(w, r, httpapi.StreamOptions{
			OnMessage: func(_ context.Context, msg []byte) error {
				if string(msg) == `"bad"` {
					return errors.New("refused")
				}
				got <- string(msg)
				return nil
			},
			ErrorEvent: func(err error) any { return map[string]string{"error": err.Error()} },
		})
		if err != nil {
			return
		}
		for m := range got {
			if m == `"bye"` {
				st.Close(websocket.CloseNormalClosure, strings.Repeat("é", 100)) // over a control frame's room
				return
			}
			_ = st.WriteJSON(map[string]string{"echo": m})
		}
	}))
	defer srv.Close()
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(liveness))
	for _, m := range []string{`"one"`, `"bad"`, `"two"`, `"bye"`} {
		if err := conn.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure || !strings.HasPrefix(ce.Text, "éé") {
				t.Fatalf("stream end: %v", err)
			}
			break
		}
		got = append(got, string(msg))
	}
	want := []string{`{"echo":"\"one\""}` + "\n", `{"echo":"\"two\""}` + "\n", `{"error":"refused"}` + "\n"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("messages %q, want %q", got, want)
	}
}
