package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// RunStdio serves one MCP session over newline-delimited JSON on in/out
// until in ends or ctx is cancelled. Each line passes the gate first; a
// refused request is answered here and never reaches the SDK.
func (s *Server) RunStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	w := &lockedWriter{w: out}
	w.cond = sync.NewCond(&w.mu)
	pr, pw := io.Pipe()
	go func() {
		err := s.pump(bufio.NewReaderSize(in, 64<<10), pw, w)
		// The client closed its end: answer what is still running before
		// the SDK sees EOF (it drops unanswered calls on close).
		w.drain(ctx)
		pw.CloseWithError(err)
	}()
	err := s.server.Run(ctx, &sdk.IOTransport{Reader: pr, Writer: nopWriteCloser{w}})
	pr.Close()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
		return nil
	}
	return err
}

// pump copies gated lines from r to the SDK's pipe. The one session of a
// stdio connection speaks the revision its initialize negotiated.
func (s *Server) pump(r *bufio.Reader, sdkIn io.Writer, out *lockedWriter) error {
	var sess Session
	for {
		line, tooLong, err := readLine(r, MaxMessageBytes)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			var v *Violation
			if tooLong {
				v = &Violation{Code: CodeInvalidRequest, Message: "message is over the 1 MiB limit"}
			} else {
				v, _ = s.gate.Check(line, sess)
				if v == nil {
					if asked, ok := initializeVersion(line); ok {
						sess.Version = negotiate(asked)
					}
				}
			}
			if v != nil {
				if !v.Notification {
					// The gate's own answers are not the SDK's: they must not
					// count against the forwarded requests drain waits for.
					if _, werr := out.writeUncounted(append(v.Response(), '\n')); werr != nil {
						return werr
					}
				}
			} else {
				if isRequest(line) {
					out.track()
				}
				if _, werr := sdkIn.Write(append(line, '\n')); werr != nil {
					return werr
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// readLine reads one line without its newline. A line over limit is
// discarded to its end and reported as tooLong.
func readLine(r *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > limit+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimRight(line, "\r\n")
		return line, tooLong, err
	}
}

// lockedWriter serializes the SDK's and the gate's writes to stdout, one
// whole message per Write, and counts the requests still unanswered.
type lockedWriter struct {
	mu      sync.Mutex
	cond    *sync.Cond
	w       io.Writer
	pending int
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	resp := l.pendingCount() > 0 && isResponse(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if resp && l.pending > 0 {
		l.pending--
		l.cond.Broadcast()
	}
	return n, err
}

func (l *lockedWriter) writeUncounted(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) pendingCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pending
}

func (l *lockedWriter) track() {
	l.mu.Lock()
	l.pending++
	l.mu.Unlock()
}

// drain waits until every forwarded request has its answer, or ctx ends.
func (l *lockedWriter) drain(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.pending > 0 && ctx.Err() == nil {
		l.cond.Wait()
	}
}

type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// initializeVersion is the revision an initialize request asks for.
func initializeVersion(line []byte) (string, bool) {
	var m struct {
		Method string `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "initialize" {
		return "", false
	}
	return m.Params.ProtocolVersion, true
}

func isRequest(line []byte) bool {
	var e envelope
	return json.Unmarshal(line, &e) == nil && len(e.ID) > 0 && e.Method != ""
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
