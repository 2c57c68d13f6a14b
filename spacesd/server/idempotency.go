package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// Idempotency keys: a mutating route (Route.Idempotent) called with an
// Idempotency-Key runs once per key and caller. A repeat of the same
// request answers the first answer, marked replayed; a repeat that arrives
// while the first still runs waits for it; the key on another request is
// refused. When its client leaves, the call runs on a little while
// (api.IdempotentOrphanGrace): a retry with its key in that time adopts it
// and gets its answer, so a dropped link costs no second run; without one
// it ends as if it had no key (a caller that cancels on purpose still ends
// its command). Keys live in
// memory only (a restart forgets them) for api.IdempotencyKeyTTL after
// their call ended, at most api.MaxIdempotencyKeys of them holding at most
// api.MaxIdempotentAnswersBytes of answers.

// metricIdempotentReplays counts answers given again for a key.
const metricIdempotentReplays = "cua_spacesd_idempotent_replays_total"

// maxDrainedForFingerprint bounds what is read of a bulk body its handler
// left unread, to fingerprint it whole: past it the request is known by its
// route, query and length only.
const maxDrainedForFingerprint = 1 << 20

type idemKey struct{ caller, key string }

// idemCall is one key's call: running until done is closed, then its
// answer.
type idemCall struct {
	route string
	// fingerprint identifies the request: its method, path, query and
	// body. For a bulk body it is known only when the call ended (the
	// body is hashed as the handler reads it); whole says whether it
	// covers the entire body, else it covers the route, query and length.
	fingerprint [32]byte
	whole       bool
	done        chan struct{}
	// The answer, once done. aborted: the call was cut short (the token
	// rotated, the daemon is stopping) and kept nothing: a repeat runs.
	status   int
	header   http.Header
	body     []byte
	tooLarge bool
	aborted  bool
	ended    time.Time
	// waiters are the repeats waiting for the call now; adoptedOnce says
	// one came since the last look (see orphaned).
	waiters     int
	adoptedOnce bool
}

type idempotency struct {
	now      func() time.Time
	ttl      time.Duration
	max      int
	maxBytes int
	// orphanGrace is how long a call whose client left waits for a retry
	// to adopt it (api.IdempotentOrphanGrace).
	orphanGrace time.Duration
	replays     Counter

	mu    sync.Mutex
	calls map[idemKey]*idemCall
	// bytes is the size of the answers kept.
	bytes int
}

func newIdempotency(now func() time.Time, m Metrics) *idempotency {
	if now == nil {
		now = time.Now
	}
	return &idempotency{now: now, ttl: api.IdempotencyKeyTTL, max: api.MaxIdempotencyKeys, maxBytes: api.MaxIdempotentAnswersBytes,
		orphanGrace: api.IdempotentOrphanGrace,
		replays:     m.Counter(metricIdempotentReplays), calls: map[idemKey]*idemCall{}}
}

// callerOf names the caller keys belong to: a principal's person (one
// person's key never answers another's call), else the token's holder
// (idempotent routes take no tickets: New refuses one that does).
func callerOf(c Caller) string {
	if c.Principal != nil {
		return "person:" + c.Principal.Person
	}
	return "token"
}

// serve runs h for a request that carries a key.
func (d *idempotency) serve(w http.ResponseWriter, r *http.Request, label, bodyType string, h http.HandlerFunc) {
	key := r.Header.Get(api.HeaderIdempotencyKey)
	if !api.ValidIdempotencyKey(key) {
		refuse(w, r, api.Errorf(api.KindInvalidArgument, "%s must be 1 to %d visible ASCII characters", api.HeaderIdempotencyKey, api.MaxIdempotencyKeyLength))
		return
	}
	k := idemKey{callerOf(CallerOf(r.Context())), key}

	// A JSON body is small (bounded by the route): it is read here, so the
	// request is known whole before anything runs.
	prefix := requestPrefix(r)
	var fp [32]byte
	whole := bodyType != BodyBytes
	if whole {
		b, err := io.ReadAll(io.LimitReader(r.Body, httpapi.MaxJSONBodyBytes+1))
		if err != nil {
			httpapi.WriteError(w, api.Errorf(api.KindIO, "read the request body: %w", err))
			return
		}
		r.Body = readCloser{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
		h := sha256.New()
		h.Write(prefix)
		h.Write(b)
		copy(fp[:], h.Sum(nil))
	}

	for {
		call, first := d.begin(k, label, fp, whole)
		if first {
			d.run(w, r, call, k, prefix, h)
			return
		}
		// A repeat: wait for the first call's answer. While it waits, the
		// first call is adopted: its own client leaving does not end it.
		d.adopt(call, +1)
		select {
		case <-call.done:
			d.adopt(call, -1)
		case <-r.Context().Done():
			d.adopt(call, -1)
			httpapi.WriteError(w, api.Errorf(api.KindCancelled, "call cancelled while the first call with its %s ran", api.HeaderIdempotencyKey))
			return
		}
		if call.aborted {
			continue // it kept nothing: this one runs
		}
		if !whole {
			fp = bulkFingerprint(prefix, r, call.whole)
		}
		if call.route != label || call.fingerprint != fp {
			httpapi.WriteError(w, api.Errorf(api.KindInvalidArgument,
				"the %s was used before on a different request (%s): use a new key for a new request", api.HeaderIdempotencyKey, call.route).
				WithReason(api.ReasonIdempotencyKeyReused).WithRetryable(false))
			return
		}
		if call.tooLarge {
			httpapi.WriteError(w, api.Errorf(api.KindPreconditionFailed,
				"the call with this %s ran, but its answer was too large to keep (over %d bytes)", api.HeaderIdempotencyKey, api.MaxIdempotentAnswerBytes).
				WithHint("read the result another way (the file, the process's output); do not run the call again blindly"))
			return
		}
		d.replays.Add(1)
		replay(w, call)
		return
	}
}

// begin answers the key's call, and whether it is new (the caller runs
// it). A JSON request's mismatch is found at once by the caller, after the
// call ends.
func (d *idempotency) begin(k idemKey, label string, fp [32]byte, whole bool) (*idemCall, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if c, ok := d.calls[k]; ok {
		if c.ended.IsZero() || now.Sub(c.ended) < d.ttl {
			return c, false
		}
		d.forgetLocked(k, c)
	}
	d.evictLocked(now)
	c := &idemCall{route: label, fingerprint: fp, whole: whole, done: make(chan struct{})}
	d.calls[k] = c
	return c, true
}

// evictLocked forgets expired keys, then the oldest finished ones while
// the store holds too many keys or too many bytes of answers. Calls still
// running are never forgotten: they can hold the store past its bound by
// as many requests as run at once.
func (d *idempotency) evictLocked(now time.Time) {
	if len(d.calls) < d.max && d.bytes <= d.maxBytes {
		return
	}
	finished := make([]idemKey, 0, len(d.calls))
	for k, c := range d.calls {
		switch {
		case c.ended.IsZero():
		case now.Sub(c.ended) >= d.ttl:
			d.forgetLocked(k, c)
		default:
			finished = append(finished, k)
		}
	}
	slices.SortFunc(finished, func(a, b idemKey) int { return d.calls[a].ended.Compare(d.calls[b].ended) })
	for _, k := range finished {
		if len(d.calls) < d.max && d.bytes <= d.maxBytes {
			return
		}
		d.forgetLocked(k, d.calls[k])
	}
}

func (d *idempotency) forgetLocked(k idemKey, c *idemCall) {
	delete(d.calls, k)
	d.bytes -= len(c.body)
}

// run is the first call of a key: the handler runs on a context that the
// client's leaving does not end (the token's rotation and the daemon's
// stop still do), and its answer is kept.
func (d *idempotency) run(w http.ResponseWriter, r *http.Request, call *idemCall, k idemKey, prefix []byte, h http.HandlerFunc) {
	session := r.Context()
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(session))
	defer cancel(nil)
	stop := context.AfterFunc(session, func() {
		if cause := context.Cause(session); cause != nil && cause != context.Canceled {
			cancel(cause) // the session ended: rotation or shutdown
			return
		}
		d.orphaned(call, cancel)
	})
	defer stop()
	var hashed *hashingBody
	if !call.whole {
		hashed = &hashingBody{r: r.Body, h: sha256.New()}
		hashed.h.Write(prefix)
		r.Body = readCloser{hashed, r.Body}
	}
	kw := &keepingWriter{ResponseWriter: w, status: http.StatusOK}
	h(kw, r.WithContext(ctx))

	d.mu.Lock()
	defer d.mu.Unlock()
	defer close(call.done)
	call.ended = d.now()
	if ctx.Err() != nil {
		call.aborted = true
		delete(d.calls, k)
		return
	}
	if hashed != nil {
		copy(call.fingerprint[:], hashed.finish())
		call.whole = hashed.eof
		if !call.whole {
			copy(call.fingerprint[:], lengthFingerprint(prefix, r.ContentLength))
		}
	}
	call.status, call.header, call.body, call.tooLarge = kw.status, kw.Header().Clone(), kw.buf.Bytes(), kw.over
	d.bytes += len(call.body)
	d.evictLocked(call.ended)
}

// orphaned is called when the client of a first call left: a dropped
// link, or a caller that cancelled on purpose (an MCP cancellation). The
// call runs on for orphanGrace, in which a retry with its key adopts it
// (and gets its answer); without one, it is cancelled as an unkeyed call
// would have been at once, its key freed. A call that is adopted runs to
// its end.
func (d *idempotency) orphaned(call *idemCall, cancel context.CancelCauseFunc) {
	var check func()
	check = func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		select {
		case <-call.done:
			return
		default:
		}
		if call.waiters > 0 {
			return
		}
		if call.adoptedOnce {
			// Its adopters left too: give the next retry the same grace.
			call.adoptedOnce = false
			time.AfterFunc(d.orphanGrace, check)
			return
		}
		cancel(errClientLeft)
	}
	time.AfterFunc(d.orphanGrace, check)
}

// adopt counts the repeats waiting for call.
func (d *idempotency) adopt(call *idemCall, delta int) {
	d.mu.Lock()
	call.waiters += delta
	if delta > 0 {
		call.adoptedOnce = true
	}
	d.mu.Unlock()
}

// errClientLeft ends a keyed call whose client left and sent no retry.
var errClientLeft = errors.New("the caller left, and no retry with the call's Idempotency-Key came")

// replay writes a kept answer again, marked replayed.
func replay(w http.ResponseWriter, c *idemCall) {
	for name, v := range c.header {
		if name == "Content-Length" || name == "Date" {
			continue
		}
		w.Header()[name] = v
	}
	w.Header().Set(api.HeaderIdempotencyReplayed, "true")
	body := markReplayed(c.body, c.header.Get("Content-Type"))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(c.status)
	_, _ = w.Write(body)
}

// markReplayed adds "replayed": true to a JSON object answer.
func markReplayed(body []byte, contentType string) []byte {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' || !bytes.HasPrefix([]byte(contentType), []byte("application/json")) {
		return body
	}
	rest := bytes.TrimLeft(trimmed[1:], " \t\r\n")
	out := make([]byte, 0, len(body)+20)
	out = append(out, `{"replayed":true`...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

// requestPrefix is what identifies a request besides its body.
func requestPrefix(r *http.Request) []byte {
	return []byte(r.Method + " " + r.URL.Path + "?" + r.URL.RawQuery + "\n" + r.Header.Get("Content-Type") + "\n")
}

// bulkFingerprint reads a repeated bulk body to identify it as the first
// call was: whole, or by its length.
func bulkFingerprint(prefix []byte, r *http.Request, whole bool) [32]byte {
	var fp [32]byte
	if !whole {
		copy(fp[:], lengthFingerprint(prefix, r.ContentLength))
		return fp
	}
	h := sha256.New()
	h.Write(prefix)
	_, _ = io.Copy(h, r.Body)
	copy(fp[:], h.Sum(nil))
	return fp
}

func lengthFingerprint(prefix []byte, length int64) []byte {
	h := sha256.New()
	h.Write(prefix)
	h.Write([]byte("length " + strconv.FormatInt(length, 10)))
	return h.Sum(nil)
}

// hashingBody hashes a body as its handler reads it.
type hashingBody struct {
	r   io.Reader
	h   hash.Hash
	eof bool
}

func (b *hashingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.h.Write(p[:n])
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// finish reads what the handler left of the body (a little of it) and
// answers the hash.
func (b *hashingBody) finish() []byte {
	if !b.eof {
		n, err := io.Copy(b.h, io.LimitReader(b.r, maxDrainedForFingerprint))
		b.eof = err == nil && n < maxDrainedForFingerprint
	}
	return b.h.Sum(nil)
}

type readCloser struct {
	io.Reader
	io.Closer
}

// keepingWriter passes an answer on and keeps a copy of it.
type keepingWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
	buf    bytes.Buffer
	over   bool
}

func (k *keepingWriter) WriteHeader(code int) {
	if !k.wrote {
		k.status, k.wrote = code, true
	}
	k.ResponseWriter.WriteHeader(code)
}

func (k *keepingWriter) Write(p []byte) (int, error) {
	k.wrote = true
	if !k.over {
		if k.buf.Len()+len(p) > api.MaxIdempotentAnswerBytes {
			k.over = true
			k.buf = bytes.Buffer{}
		} else {
			k.buf.Write(p)
		}
	}
	// The client may be gone: the answer is kept all the same.
	return k.ResponseWriter.Write(p)
}

func (k *keepingWriter) Unwrap() http.ResponseWriter { return k.ResponseWriter }

func (k *keepingWriter) Flush() { _ = http.NewResponseController(k.ResponseWriter).Flush() }
