// Package faultproxy is a TCP proxy on loopback for tests that cut a link
// on purpose: it forwards each connection to a target and, when told,
// drops a connection after its request went through and before its answer
// came back (the moment a client cannot know whether its call ran), cuts
// every open connection at once (a link that went down), refuses new ones
// for a while (a network that is away), or delays what it forwards.
package faultproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards connections from Addr to its target.
type Proxy struct {
	// Addr is where clients connect ("127.0.0.1:port").
	Addr string

	target string
	ln     net.Listener
	// cuts is how many answers are still to be cut.
	cuts atomic.Int64
	// Cut counts the answers cut so far.
	Cut atomic.Int64
	// Accepted counts the client connections accepted so far; Open those
	// still forwarded (one leaves once its client and the target have
	// both ended it).
	Accepted, Open atomic.Int64

	// refusing: new connections are closed at once (see Refuse).
	refusing atomic.Bool
	// delay is added before each chunk is forwarded, in nanoseconds.
	delay atomic.Int64

	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// CutAll closes every connection open now, both sides, as a link that
// went down does; new connections are forwarded as before.
func (p *Proxy) CutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

// Refuse makes new connections close as soon as they are accepted (on),
// or be forwarded again (off).
func (p *Proxy) Refuse(on bool) { p.refusing.Store(on) }

// Delay holds every chunk for d before forwarding it, both ways (0: none).
func (p *Proxy) Delay(d time.Duration) { p.delay.Store(int64(d)) }

func (p *Proxy) wait() {
	if d := time.Duration(p.delay.Load()); d > 0 {
		time.Sleep(d)
	}
}

// Start listens on a free loopback port and forwards to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// CutAnswers makes the next n answers (the first bytes the target sends
// back on any connection) never arrive: the connection is closed on both
// sides instead, after the request reached the target.
func (p *Proxy) CutAnswers(n int) { p.cuts.Add(int64(n)) }

// Close stops the proxy and every connection through it.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns[c] = struct{}{}
	p.mu.Unlock()
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	p.Accepted.Add(1)
	p.Open.Add(1)
	defer p.Open.Add(-1)
	p.track(client)
	defer p.untrack(client)
	if p.refusing.Load() {
		return
	}
	upstream, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	p.track(upstream)
	defer p.untrack(upstream)

	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(upstream, delayed{client, p})
		_ = upstream.(*net.TCPConn).CloseWrite()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := upstream.Read(buf)
		if n > 0 {
			p.wait()
			if p.takeCut() {
				// The request went through and its answer started:
				// drop both sides without passing it on.
				p.Cut.Add(1)
				_ = client.Close()
				_ = upstream.Close()
				break
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_ = client.Close()
			}
			break
		}
	}
	_ = client.Close()
	<-done
}

// delayed reads from r, then waits the proxy's delay.
type delayed struct {
	r io.Reader
	p *Proxy
}

func (d delayed) Read(b []byte) (int, error) {
	n, err := d.r.Read(b)
	if n > 0 {
		d.p.wait()
	}
	return n, err
}

func (p *Proxy) takeCut() bool {
	for {
		n := p.cuts.Load()
		if n <= 0 {
			return false
		}
		if p.cuts.CompareAndSwap(n, n-1) {
			return true
		}
	}
}
