package client_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
)

// A daemon that goes silent mid-stream (a frozen VM, a cut link that sends
// no RST) ends the client's stream with kind stream after the idle timeout,
// instead of a Next that waits for ever.
func TestStreamEndsWhenTheDaemonGoesSilent(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := websocket.Upgrader{}
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		<-hold // reads nothing, so it never answers a ping
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "", client.WithStreamKeepAlive(50*time.Millisecond, 300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Watch(t.Context(), "/tmp", false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() { _, err := s.Next(); done <- err }()
	select {
	case err := <-done:
		if api.KindOf(err) != api.KindStream {
			t.Fatalf("Next after silence: %v, want kind stream", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Next still waits on a silent daemon")
	}
}
