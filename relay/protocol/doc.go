// Package protocol is the wire protocol of cua-relay: what travels between
// a Space (cua-spacesd), the relay, and the bridge. It stands on the
// standard library and api alone, so the daemon, the bridge and the relay
// all import it, and each of them speaks the same bytes (the model is
// Tailscale's derp, whose protocol was written first and apart).
//
// # The pieces and how they fit
//
// A Space dials the relay over WSS. Its computer token (NewToken of kind
// TokenComputer) travels in the upgrade's "Authorization: Bearer" header,
// never in a frame, so it is checked before a byte of this protocol is
// read, and it never sits in a buffer the protocol logs. The WebSocket
// connection carries a yamux session (the session layer, not this
// package); its first stream is the control stream, and it carries
// control frames (Frame, read by Reader and written by Writer):
//
//	Space → relay  Hello   {min/max version, computer, daemon version}
//	relay → Space  Welcome {version, grant key, heartbeat, node}
//	                 (or Close{CloseUnsupportedVersion, ...} and the end)
//	either way     Ping / Pong every Welcome.Heartbeat
//	relay → Space  OpenData, Kick, GoAway
//	either way     Close {code, message} before it ends the session
//
// Version negotiation: Hello names the range the Space speaks; the relay
// answers the highest version both speak (Negotiate), or sends Close with
// CloseUnsupportedVersion and ends the session. The Space checks that
// Welcome.Version is in its range (Hello.Accepts).
//
// Every other yamux stream is opened by the relay, one per relayed
// connection of a caller. It starts with a stream Header (WriteHeader,
// ReadHeader): magic, version, the stream's kind (StreamHTTP: the daemon
// serves HTTP/1.1 on the rest of the stream) and a grant. The Space checks
// the grant itself (VerifyGrant) with the relay key it pinned from
// Welcome.GrantKey (over a TLS connection it verified), and serves the
// stream as the grant's person in the grant's role; a stream whose header
// fails is closed at once, with no answer. A stream lives on past its
// grant's expiry: the grant proves who opened it, when it opened.
//
// Bulk transfers go apart from the interactive: the relay sends OpenData
// (a one-time data token of kind TokenData and a path); the Space dials
// wss://<relay><path> with the data token as its bearer, and the relay
// then writes a stream Header on that connection as on any relayed
// stream. A keystroke never queues behind a download that way.
//
// Kick ends the sessions of one person (or of every non-owner, KickAll):
// the Space closes every stream whose grant names them. GoAway asks the
// Space to leave and come back after RetryAfter (a relay restarting or
// shedding load).
//
// Tokens (token.go) are the relay's secrets for users, computers and data
// connections: a prefix a secret scanner can find, 256 random bits, and a
// checksum that catches a typo offline. A store keeps only HashToken of a
// token and checks a presented one with TokenEqual, in constant time.
//
// Close codes (close.go) name why a session or a stream ended, as numbers
// in the WebSocket private range (so a WSS close frame may carry them) and
// as words (so every log and client says the same thing).
//
// Every parser here takes untrusted bytes: each bounds what it reads by a
// named limit before it allocates, refuses unknown JSON fields and trailing
// data, and answers an *api.Error with a kind (and a fuzz target holds it
// to that). docs/relay-protocol.md describes the bytes.
package protocol
