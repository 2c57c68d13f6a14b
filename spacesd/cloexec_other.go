//go:build !linux

package main

import "errors"

// closeRangeOnExec: close_range(2) is Linux's; elsewhere the caller walks
// the open descriptors.
func closeRangeOnExec(int) error { return errors.New("close_range is Linux's") }
