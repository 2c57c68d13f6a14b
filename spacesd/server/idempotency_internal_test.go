package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// The kept answers are bounded in bytes as well as in keys: the oldest
// finished ones are forgotten first, and a forgotten key runs again.
func TestIdempotentAnswersAreBoundedInBytes(t *testing.T) {
	d := newIdempotency(time.Now, newMetrics())
	d.maxBytes = 10 << 10
	runs := map[string]int{}
	handler := func(w http.ResponseWriter, r *http.Request) {
		runs[r.Header.Get(api.HeaderIdempotencyKey)]++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"pad":%q}`, strings.Repeat("x", 4<<10))
	}
	call := func(key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/v1/exec", strings.NewReader(`{}`))
		r.Header.Set(api.HeaderIdempotencyKey, key)
		w := httptest.NewRecorder()
		d.serve(w, r, "POST /v1/exec", BodyJSON, handler)
		return w
	}
	for i := range 5 {
		call(fmt.Sprint("k", i))
		time.Sleep(time.Millisecond) // distinct end times, oldest first
	}
	d.mu.Lock()
	kept, bytes := len(d.calls), d.bytes
	d.mu.Unlock()
	if bytes > d.maxBytes || kept != 2 {
		t.Fatalf("%d keys holding %d bytes kept, want the 2 newest within %d bytes", kept, bytes, d.maxBytes)
	}
	if w := call("k4"); w.Header().Get(api.HeaderIdempotencyReplayed) != "true" || runs["k4"] != 1 {
		t.Fatalf("the newest key: replayed %q, %d runs; want a replay", w.Header().Get(api.HeaderIdempotencyReplayed), runs["k4"])
	}
	if w := call("k0"); w.Header().Get(api.HeaderIdempotencyReplayed) != "" || runs["k0"] != 2 {
		t.Fatalf("the oldest key, forgotten: replayed %q, %d runs; want a second run", w.Header().Get(api.HeaderIdempotencyReplayed), runs["k0"])
	}
}
