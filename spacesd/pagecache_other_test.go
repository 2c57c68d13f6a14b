//go:build !linux

package main

import "testing"

// dropFromPageCache does nothing here: the footprint benchmarks read
// /proc, so they measure on Linux only.
func dropFromPageCache(*testing.B, string) {}
