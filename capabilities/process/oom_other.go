//go:build !linux

package process

// protectedFromOOM: only Linux has an OOM bias to inherit.
func protectedFromOOM() bool { return false }

func unprotectOOM(int) {}
