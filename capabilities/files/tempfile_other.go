//go:build !linux

package files

import "os"

// openUnnamed: only Linux has unnamed files (O_TMPFILE).
func openUnnamed(*dir) (*os.File, error) { return nil, errNoUnnamed }

func linkUnnamed(*os.File, *dir, string) error { return errCannotLink }
