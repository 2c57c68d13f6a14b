package main

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// dropFromPageCache writes back and drops the cached pages of the file at
// path (its clean pages: a running binary's stay).
func dropFromPageCache(b *testing.B, path string) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		b.Fatal(err)
	}
}
