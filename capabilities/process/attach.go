package process

import "io"

// Attach hands a process's output streams to the caller instead of the
// rings, for a program that speaks a protocol over them (an MCP server on
// stdio): a ring drops the oldest bytes when a reader falls behind, which a
// byte stream of messages cannot survive.
//
// Each writer gets the stream's bytes in order and is closed when the
// stream ends. A writer that blocks holds the process back (its pipe
// fills): it must keep taking bytes, or fail its writes once its reader is
// gone (io.Pipe does), so that the process can be reaped. A nil writer
// leaves that stream to its ring.
type Attach struct {
	Stdout, Stderr io.WriteCloser
}
