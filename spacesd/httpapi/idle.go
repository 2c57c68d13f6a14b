package httpapi

import (
	"io"
	"net/http"
	"time"
)

// BodyIdleTimeout bounds how long a bulk body (a read's answer, a write's
// or an upload chunk's request) may make no progress at all. The server
// has no whole-request timeouts (a transfer of many GiB may take hours),
// so without it a client that stops reading or sending while its TCP
// connection stays up (a paused process) would hold the handler, its file
// and, for an upload, the upload's one-writer slot for as long as the
// connection lives.
const BodyIdleTimeout = 30 * time.Second

// deadlineRefresh is how often the idle deadline is pushed forward: once
// per read or write would cost a timer update per packet for nothing.
const deadlineRefresh = time.Second

// idleBody pushes a connection's read or write deadline BodyIdleTimeout
// ahead of each read or write of a bulk body, so that only a body that
// stalls is cut, however long the whole transfer takes.
type idleBody struct {
	rc   *http.ResponseController
	set  func(*http.ResponseController, time.Time) error
	last time.Time
}

func (b *idleBody) touch() {
	if now := time.Now(); now.Sub(b.last) >= deadlineRefresh {
		b.last = now
		_ = b.set(b.rc, now.Add(BodyIdleTimeout))
	}
}

// Clear lifts the deadline once the body is done, so that the next request
// on the same connection does not inherit it.
func (b *idleBody) Clear() { _ = b.set(b.rc, time.Time{}) }

type IdleReader struct {
	idleBody
	r   io.Reader
	eof bool
}

func (i *IdleReader) Read(p []byte) (int, error) {
	i.touch()
	n, err := i.r.Read(p)
	if err == io.EOF {
		i.eof = true
	}
	return n, err
}

// Done lifts the read deadline once the whole body has been read. A body
// left unread (it stalled, or the handler refused it early) keeps it: the
// server discards the rest of such a body after the handler returns, and
// that must not wait for ever on a stalled client either.
func (i *IdleReader) Done() {
	if i.eof {
		i.Clear()
	}
}

// ReadIdle wraps a request body; the caller defers done.
func ReadIdle(w http.ResponseWriter, r io.Reader) *IdleReader {
	return &IdleReader{idleBody: idleBody{rc: http.NewResponseController(w), set: (*http.ResponseController).SetReadDeadline}, r: r}
}

type IdleWriter struct {
	idleBody
	w io.Writer
}

func (i *IdleWriter) Write(p []byte) (int, error) {
	i.touch()
	return i.w.Write(p)
}

// WriteIdle wraps a response writer for a body; the caller defers clear.
func WriteIdle(w http.ResponseWriter) *IdleWriter {
	return &IdleWriter{idleBody: idleBody{rc: http.NewResponseController(w), set: (*http.ResponseController).SetWriteDeadline}, w: w}
}
