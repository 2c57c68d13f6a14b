//go:build !linux

package pulse

// credentials: the other systems' servers judge a peer by the cookie.
func credentials() []byte { return nil }
