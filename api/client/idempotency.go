package client

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// retryPauses are the waits before each resend of a mutating call whose
// link failed: a dropped connection is usually back at once, and a longer
// outage is the caller's to judge (every call returns kind env then).
var retryPauses = []time.Duration{50 * time.Millisecond, 250 * time.Millisecond}

type idempotencyKeyKey struct{}

// MaxCallerIdempotencyKeyLength bounds a key given to WithIdempotencyKey:
// each call derives its own from it, a little longer.
const MaxCallerIdempotencyKeyLength = 200

// keySource derives the key of each mutating call made with one context
// from the caller's key: the key, a digest of the call's method, path and
// query, and how many such calls came before. A caller that makes the same
// calls again with the same key (an agent retrying a tool call that upload
// begins, sends chunks and commits) sends each the key of its first try,
// and two different calls never share one.
type keySource struct {
	base string
	mu   sync.Mutex
	seen map[string]int
}

func (s *keySource) next(req *http.Request) string {
	sum := sha256.Sum256([]byte(req.Method + " " + req.URL.Path + "?" + req.URL.RawQuery))
	id := hex.EncodeToString(sum[:6])
	s.mu.Lock()
	s.seen[id]++
	n := s.seen[id]
	s.mu.Unlock()
	if n == 1 {
		return s.base + "." + id
	}
	return s.base + "." + id + "." + strconv.Itoa(n)
}

// WithIdempotencyKey makes the mutating calls made with ctx carry keys
// derived from key, so that a caller who retries a call itself (an agent
// repeating a tool call) sends the keys of the first try: give each try a
// context of its own with the same key, and each logical call a key of its
// own. key is 1 to MaxCallerIdempotencyKeyLength visible ASCII characters.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKeyKey{}, &keySource{base: key, seen: map[string]int{}})
}

// idempotencyKey answers the key of a mutating request: derived from the
// context's, or a fresh one.
func idempotencyKey(req *http.Request) string {
	if s, ok := req.Context().Value(idempotencyKeyKey{}).(*keySource); ok {
		return s.next(req)
	}
	return NewIdempotencyKey()
}

// NewIdempotencyKey answers a fresh random key (128 bits).
func NewIdempotencyKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// retryable reports whether a failed send may go again with its key: the
// link failed, not the caller's context, nor TLS (which would fail again).
func retryable(ctx context.Context, err error) bool {
	return ctx.Err() == nil && tlsError(err) == nil
}

// replayableBody answers how to read req's body again, or nil when it
// cannot be (a stream): such a request is never resent.
func replayableBody(req *http.Request) func() (io.ReadCloser, error) {
	if req.GetBody != nil {
		return req.GetBody
	}
	if req.Body == nil || req.Body == http.NoBody {
		return func() (io.ReadCloser, error) { return http.NoBody, nil }
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
