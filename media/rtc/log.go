package rtc

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pion/logging"
)

// pionLogs routes pion's logs into the daemon's structured log, at debug
// level: pion reports every dropped viewer and closed socket as an error,
// which the daemon reports itself, once, in its own words. Without it pion
// writes plain lines to stderr, among the daemon's JSON.
type pionLogs struct{ log *slog.Logger }

func (f pionLogs) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{log: f.log.With("pion", scope)}
}

type pionLogger struct{ log *slog.Logger }

func (l pionLogger) at(level slog.Level, msg string) {
	l.log.Log(context.Background(), level, msg)
}

func (l pionLogger) Trace(string)              {}
func (l pionLogger) Tracef(string, ...any)     {}
func (l pionLogger) Debug(msg string)          { l.at(slog.LevelDebug, msg) }
func (l pionLogger) Debugf(f string, a ...any) { l.at(slog.LevelDebug, fmt.Sprintf(f, a...)) }
func (l pionLogger) Info(msg string)           { l.at(slog.LevelDebug, msg) }
func (l pionLogger) Infof(f string, a ...any)  { l.at(slog.LevelDebug, fmt.Sprintf(f, a...)) }
func (l pionLogger) Warn(msg string)           { l.at(slog.LevelDebug, msg) }
func (l pionLogger) Warnf(f string, a ...any)  { l.at(slog.LevelDebug, fmt.Sprintf(f, a...)) }
func (l pionLogger) Error(msg string)          { l.at(slog.LevelDebug, msg) }
func (l pionLogger) Errorf(f string, a ...any) { l.at(slog.LevelDebug, fmt.Sprintf(f, a...)) }
