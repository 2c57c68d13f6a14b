// Package tunnel is the session layer under the relay protocol: a
// WebSocket connection as a net.Conn (WSConn), and the yamux settings a
// control session runs with (Config). The daemon, the relay and the bridge
// build their sessions here, so both ends of a tunnel agree on its tuning.
package tunnel
