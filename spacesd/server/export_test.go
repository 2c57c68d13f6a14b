package server

import "time"

// ConnCounts exposes the connection accounting to the tests.
func (s *Server) ConnCounts() (total, anonymous, authenticated, streams int) {
	c := s.conns.counts()
	return c.Total, c.Anonymous, c.Authenticated, c.Streams
}

// AllAnonymousIdle reports whether every anonymous connection is idle as
// the server sees it (its response written and http.Server told so): a
// test's next dial then finds one to evict, however late the server's
// goroutines run on a loaded machine.
func (s *Server) AllAnonymousIdle() bool {
	t := s.conns
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.idle.Len() == t.anonymous
}

// Reload makes the token file's poll happen now.
func (a *Auth) Reload() { a.reload() }

// ExpireCertCheck makes the next handshake look at the certificate files.
func ExpireCertCheck(c *CertFiles) {
	c.mu.Lock()
	c.checked = time.Time{}
	c.mu.Unlock()
}
