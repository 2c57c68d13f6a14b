package server

import "time"

// ConnCounts exposes the connection accounting to the tests.
func (s *Server) ConnCounts() (total, anonymous, authenticated, streams int) {
	c := s.conns.counts()
	return c.Total, c.Anonymous, c.Authenticated, c.Streams
}

// Reload makes the token file's poll happen now.
func (a *Auth) Reload() { a.reload() }

// ExpireCertCheck makes the next handshake look at the certificate files.
func ExpireCertCheck(c *CertFiles) {
	c.mu.Lock()
	c.checked = time.Time{}
	c.mu.Unlock()
}
