package browser_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// cdp is a client of the Chrome DevTools Protocol over the pipe of
// --remote-debugging-pipe: JSON messages, each ended by a NUL byte. The
// tests need a handful of commands, so this small client stands in for a
// library: commands with their answers, and events handed to one hook.
type cdp struct {
	w  io.WriteCloser
	mu sync.Mutex // guards next, pending and writes
	// next numbers the commands; pending waits for their answers.
	next    int64
	pending map[int64]chan cdpAnswer
	onEvent func(method, session string, params json.RawMessage)
	done    chan struct{} // closed when the browser's end of the pipe closes
}

type cdpAnswer struct {
	result json.RawMessage
	err    error
}

type cdpMessage struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// newCDP talks to a browser that reads commands from w and writes its
// messages to r.
func newCDP(w io.WriteCloser, r *os.File, onEvent func(method, session string, params json.RawMessage)) *cdp {
	c := &cdp{w: w, pending: map[int64]chan cdpAnswer{}, onEvent: onEvent, done: make(chan struct{})}
	go c.read(r)
	return c
}

// maxCDPMessage bounds one message of the browser (a screenshot of a big
// page is a few MB of base64).
const maxCDPMessage = 64 << 20

func (c *cdp) read(r *os.File) {
	defer close(c.done)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		b, err := br.ReadBytes(0)
		if err != nil {
			c.mu.Lock()
			for id, ch := range c.pending {
				ch <- cdpAnswer{err: errors.New("the browser closed its DevTools pipe")}
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
		if len(b) > maxCDPMessage {
			continue
		}
		var m cdpMessage
		if json.Unmarshal(b[:len(b)-1], &m) != nil {
			continue
		}
		if m.ID == 0 {
			if c.onEvent != nil && m.Method != "" {
				c.onEvent(m.Method, m.SessionID, m.Params)
			}
			continue
		}
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ch == nil {
			continue
		}
		if m.Error != nil {
			ch <- cdpAnswer{err: fmt.Errorf("%s (%d)", m.Error.Message, m.Error.Code)}
		} else {
			ch <- cdpAnswer{result: m.Result}
		}
	}
}

// call sends a command (to a page's session, or the browser with "") and
// decodes its result into out (nil: dropped).
func (c *cdp) call(ctx context.Context, session, method string, params, out any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	if params == nil {
		p = []byte("{}")
	}
	ch := make(chan cdpAnswer, 1)
	c.mu.Lock()
	c.next++
	id := c.next
	c.pending[id] = ch
	b, _ := json.Marshal(cdpMessage{ID: id, Method: method, SessionID: session, Params: p})
	_, err = c.w.Write(append(b, 0))
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return fmt.Errorf("%s: %w", method, a.err)
		}
		if out != nil {
			return json.Unmarshal(a.result, out)
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}
