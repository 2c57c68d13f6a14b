package tunnel

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/yamux"
)

// The tuning of a control session (DESIGN §4). yamux's defaults end
// sessions on slow links and paused VMs: a 10 s write timeout, and a
// 256 KiB window no stream may exceed is what keeps a bulk stream from
// queueing the interactive ones behind it on the same link.
const (
	// StreamWindow is each stream's receive window.
	StreamWindow = 256 << 10
	// KeepAlive is how often yamux pings the peer.
	KeepAlive = 15 * time.Second
	// WriteTimeout bounds a write to the connection before yamux gives up
	// on the session.
	WriteTimeout = 30 * time.Second
	// StreamOpenTimeout bounds the wait for the peer's ack of a new stream.
	StreamOpenTimeout = 30 * time.Second
	// StreamCloseTimeout bounds a half-closed stream.
	StreamCloseTimeout = time.Minute
	// AcceptBacklog bounds the streams opened and not yet accepted.
	AcceptBacklog = 256
)

// Config is the yamux configuration of every control session; log gets
// yamux's own lines (at Debug: they are about the peer's misbehaviour).
func Config(log *slog.Logger) *yamux.Config {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &yamux.Config{
		AcceptBacklog:          AcceptBacklog,
		EnableKeepAlive:        true,
		KeepAliveInterval:      KeepAlive,
		ConnectionWriteTimeout: WriteTimeout,
		MaxStreamWindowSize:    StreamWindow,
		StreamOpenTimeout:      StreamOpenTimeout,
		StreamCloseTimeout:     StreamCloseTimeout,
		Logger:                 yamuxLogger{log},
	}
}

// yamuxLogger sends yamux's log lines to slog.
type yamuxLogger struct{ log *slog.Logger }

func (l yamuxLogger) Print(v ...any) {
	l.log.Log(context.Background(), slog.LevelDebug, fmt.Sprint(v...))
}
func (l yamuxLogger) Printf(format string, v ...any) {
	l.log.Log(context.Background(), slog.LevelDebug, fmt.Sprintf(format, v...))
}
func (l yamuxLogger) Println(v ...any) {
	l.log.Log(context.Background(), slog.LevelDebug, fmt.Sprint(v...))
}
