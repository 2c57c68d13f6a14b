//go:build !unix

package server

import "os"

// fileEpoch falls back to the modification time where there is no ctime.
func fileEpoch(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return mixEpoch(fi.ModTime().UnixNano(), 0, 0), nil
}
