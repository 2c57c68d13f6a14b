package spacesdtest

import "github.com/trycua/cua-spacesd/internal/testenv"

// Logs is a daemon's log as a test reads it (give it to Options.Logger's
// handler): the daemon writes while the test reads.
type Logs = testenv.SyncBuffer
