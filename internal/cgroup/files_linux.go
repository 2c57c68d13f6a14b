package cgroup

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultLimits are the limits a zero Config field takes: each group at
// most DefaultGroupPidsMax tasks, all groups together allPidsPercent of
// what the kernel allows (the smaller of pid_max and threads-max), and
// memory for all (and for each) of RAM less a reserve, so the daemon and
// the rest of the Space keep room to breathe.
func DefaultLimits() (group, all Limits) {
	kernel := int64(0)
	for _, f := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		if n, err := strconv.ParseInt(strings.TrimSpace(readString(f)), 10, 64); err == nil && n > 0 && (kernel == 0 || n < kernel) {
			kernel = n
		}
	}
	if kernel > 0 {
		all.PidsMax = kernel * allPidsPercent / 100
		group.PidsMax = min(DefaultGroupPidsMax, all.PidsMax)
	}
	if ram := parseMemTotal(readString("/proc/meminfo")); ram > 0 {
		all.MemoryMax = ram - memoryReserve(ram)
		group.MemoryMax = all.MemoryMax
	}
	return group, all
}

func resolveLimits(asked, def Limits) Limits {
	pick := func(a, d int64) int64 {
		switch {
		case a < 0:
			return 0
		case a == 0:
			return d
		}
		return a
	}
	return Limits{PidsMax: pick(asked.PidsMax, def.PidsMax), MemoryMax: pick(asked.MemoryMax, def.MemoryMax)}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// readString reads a small kernel file; "" when it cannot.
func readString(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return string(b)
}

// writeFile writes s to a cgroup control file in one write(2): the
// kernel's answer to that write is the error.
func writeFile(p, s string) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(s)
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

// removeTree removes the cgroup dir and every cgroup below it, deepest
// first (rmdir is how a cgroup goes; its control files go with it). A
// missing dir is fine.
func removeTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name())); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
	}
	return errors.Join(errs...)
}
