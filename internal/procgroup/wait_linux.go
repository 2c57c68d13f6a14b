package procgroup

import "golang.org/x/sys/unix"

// waitNoReap waits for pid to exit without reaping it (WNOWAIT) and says
// whether it could.
func waitNoReap(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err == nil
		}
	}
}
