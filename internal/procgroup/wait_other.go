//go:build !linux

package procgroup

// waitNoReap cannot wait without reaping here (no waitid in x/sys/unix for
// this OS): Reap then marks the leader right after reaping it.
func waitNoReap(int) bool { return false }
