package server_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// A limit that frees up on its own (processes running) answers 429 with
// limit_exceeded, retryable, and a Retry-After saying when to try again.
func TestLimitExceededSaysWhenToRetry(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{Process: process.Options{MaxProcesses: 1}})
	if _, err := d.Client.Start(t.Context(), api.StartRequest{Command: api.Command{Argv: []string{"sleep", "100"}}}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, d.URL+api.PathProcesses,
		strings.NewReader(`{"argv":["true"]}`))
	req.Header.Set("Authorization", "Bearer "+d.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env api.ErrorEnvelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusTooManyRequests || env.Error == nil ||
		env.Error.Kind != api.KindLimitExceeded || !env.Error.Retryable {
		t.Fatalf("a start over max_processes: %d %+v; want 429 limit_exceeded, retryable", resp.StatusCode, env.Error)
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || time.Duration(secs)*time.Second != httpapi.LimitRetryAfter {
		t.Fatalf("Retry-After %q, want %v in seconds", resp.Header.Get("Retry-After"), httpapi.LimitRetryAfter)
	}
}
