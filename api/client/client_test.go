package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
)

func TestNewClientURL(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"127.0.0.1:3211", "http://127.0.0.1:3211", false},
		{"http://h:1/", "http://h:1", false},
		{"https://h/base/", "https://h/base", false},
		{"ftp://h", "", true},
		{"http://", "", true},
		{"::nonsense", "", true},
	}
	for _, tt := range tests {
		c, err := client.New(tt.in, "")
		if (err != nil) != tt.wantErr {
			t.Errorf("NewClient(%q) err = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if err != nil {
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Errorf("NewClient(%q) kind = %s", tt.in, api.KindOf(err))
			}
			continue
		}
		if c.BaseURL() != tt.want {
			t.Errorf("NewClient(%q).BaseURL() = %q, want %q", tt.in, c.BaseURL(), tt.want)
		}
	}
}

// A server that is not spacesd is told apart from a spacesd that refuses.
func TestClientTellsForeignServers(t *testing.T) {
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nginx says no", http.StatusUnauthorized)
	}))
	defer foreign.Close()
	c, _ := client.New(foreign.URL, "tok")
	if _, err := c.Health(context.Background()); api.KindOf(err) != api.KindSpacesdNotAvailable {
		t.Errorf("health of a foreign server: %v", err)
	}
	if _, err := c.Capabilities(context.Background()); api.KindOf(err) != api.KindSpacesdNotAvailable {
		t.Errorf("call to a foreign server: %v", err)
	}

	ours := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"kind":"unauthenticated","message":"wrong token","retryable":false}}`)
	}))
	defer ours.Close()
	c, _ = client.New(ours.URL, "tok")
	_, err := c.Capabilities(context.Background())
	var e *api.Error
	if !errors.As(err, &e) || e.Kind != api.KindUnauthenticated || e.Status != http.StatusUnauthorized {
		t.Errorf("envelope error decoded as %#v", err)
	}
}

func TestUnreachableIsEnvAndCancelIsCancelled(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	c, _ := client.New(url, "")
	_, err := c.Capabilities(context.Background())
	if e := api.AsError(err); e.Kind != api.KindEnv || !e.Retryable {
		t.Errorf("unreachable: %+v", e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Capabilities(ctx); api.KindOf(err) != api.KindCancelled {
		t.Errorf("cancelled call: %v", err)
	}
}
