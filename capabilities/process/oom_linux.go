package process

import (
	"os"
	"strconv"
	"strings"
)

// oomScoreFile is where Linux keeps a process's OOM killer bias.
const oomScoreFile = "oom_score_adj"

// protectedFromOOM reports whether the daemon runs with a negative OOM
// bias (the systemd unit sets OOMScoreAdjust=-900), which its children
// would inherit.
func protectedFromOOM() bool {
	b, err := os.ReadFile("/proc/self/" + oomScoreFile)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return err == nil && n < 0
}

// unprotectOOM gives a child the neutral OOM bias, so that the kernel,
// short of memory, kills the Space's work before the daemon that serves
// it. Raising a bias needs no privilege. A child that forks in the
// microseconds before this write leaves those grandchildren protected;
// its tree's memory.max bounds them all the same.
func unprotectOOM(pid int) {
	f, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/"+oomScoreFile, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	_, _ = f.WriteString("0")
	_ = f.Close()
}
