// Package faultproxy is a TCP proxy on loopback for tests that cut a link
// on purpose: it forwards each connection to a target and, when told,
// drops a connection after its request went through and before its answer
// came back: the moment a client cannot know whether its call ran.
package faultproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
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

	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
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
	upstream, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	p.track(upstream)
	defer p.untrack(upstream)

	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(upstream, client)
		_ = upstream.(*net.TCPConn).CloseWrite()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := upstream.Read(buf)
		if n > 0 {
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
