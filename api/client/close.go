package client

import "net/http"

// CloseIdleConnections closes the idle connections of a client that owns
// its transport (one built with a dialer or TLS trust of its own), as
// http.Client.CloseIdleConnections does. Calls and streams in flight go
// on, and the client stays usable (a later call dials again). A plain
// client shares the package's pool with every other plain client, so
// closing it would cut theirs: for it this does nothing.
func (c *Client) CloseIdleConnections() {
	if t, ok := c.http.Transport.(*http.Transport); ok && t != defaultTransport {
		t.CloseIdleConnections()
	}
}
