//go:build race

package desktop_test

// raceEnabled: the race detector makes sync.Pool drop a quarter of what
// it is given, so buffer reuse cannot be measured.
const raceEnabled = true
