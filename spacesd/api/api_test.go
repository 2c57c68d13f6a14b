package api_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/trycua/cua-spacesd/spacesd/api"
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
		c, err := api.NewClient(tt.in, "")
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
	c, _ := api.NewClient(foreign.URL, "tok")
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
	c, _ = api.NewClient(ours.URL, "tok")
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
	c, _ := api.NewClient(url, "")
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

func TestErrorsKeepTheirCause(t *testing.T) {
	cause := fs.ErrNotExist
	err := api.Errorf(api.KindNotFound, "stat /x: %w", cause)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("Errorf lost the wrapped cause")
	}
	if err.HTTPStatus() != http.StatusNotFound || err.Retryable || err.Hint == "" {
		t.Errorf("not_found defaults: %+v", err)
	}
	missing := api.CapabilityMissing(api.FeatureScreenshot, "no X display: DISPLAY is unset")
	if missing.HTTPStatus() != http.StatusNotImplemented || missing.Feature != "screenshot" {
		t.Errorf("capability_missing: %+v", missing)
	}
	if api.AsError(errors.New("boom")).Kind != api.KindEnv {
		t.Error("a foreign error is not kind env")
	}
}

func TestFileModeString(t *testing.T) {
	for mode, want := range map[fs.FileMode]string{0o644: "0644", 0o755 | fs.ModeDir: "0755", 0: "0000", 0o7: "0007", 0o4755: "0755"} {
		if got := api.FileModeString(mode); got != want {
			t.Errorf("FileModeString(%o) = %q, want %q", mode, got, want)
		}
	}
}
