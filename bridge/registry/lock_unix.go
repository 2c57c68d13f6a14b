//go:build unix

package registry

import (
	"os"
	"path/filepath"
	"syscall"

	"github.com/trycua/cua-spacesd/api"
)

// lock takes an flock on the lock file: exclusive for a change, shared for a
// read. The kernel drops it if the process dies, so a crashed bridge never
// leaves the registry locked.
func (r *Registry) lock(exclusive bool) (func(), error) {
	p := filepath.Join(r.home, LockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, api.Errorf(api.KindIO, "open lock %s: %w", p, err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, api.Errorf(api.KindIO, "lock %s: %w", p, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
