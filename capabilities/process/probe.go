package process

import (
	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
)

// ProbeShell reports the shell feature: the shell form runs ShellPath, so
// the feature stands or falls with it. A stat is cheap enough to answer live.
func ProbeShell() api.FeatureStatus {
	if err := unix.Access(ShellPath, unix.X_OK); err != nil {
		return api.FeatureStatus{Limitation: ShellPath + " is missing or not executable (" + err.Error() + "); install a POSIX shell in the image"}
	}
	return api.FeatureStatus{Supported: true}
}

// ProbePTY reports the pty feature by opening and closing one
// pseudo-terminal. Whether the guest has /dev/ptmx (and devpts mounted) does
// not change while the daemon runs, so a caller may keep the first answer.
func ProbePTY() api.FeatureStatus {
	p, tty, err := pty.Open()
	if err != nil {
		return api.FeatureStatus{Limitation: "cannot open a pseudo-terminal (" + err.Error() + "); mount devpts at /dev/pts with /dev/ptmx"}
	}
	_ = p.Close()
	_ = tty.Close()
	return api.FeatureStatus{Supported: true}
}
