//go:build !race

package desktop_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
