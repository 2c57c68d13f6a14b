package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// tokenFDEnv carries, across the daemon's re-execution of itself, the
// number of the descriptor its token is read from (see takeEnvToken).
const tokenFDEnv = "CUA_SPACESD_TOKEN_FD"

// maxEnvTokenBytes bounds a token given in the environment: it must fit a
// pipe's buffer whole, so that handing it over never blocks.
const maxEnvTokenBytes = 4096

// takeEnvToken returns the token given in CUA_SPACESD_TOKEN and sees to it
// that the serving process's environment no longer holds it.
//
// os.Unsetenv is not enough: the kernel keeps the environment a program was
// started with, and /proc/<pid>/environ (ps e on macOS) shows it to every
// process of the same user. So a daemon given its token that way executes
// itself again, once, with the same pid and arguments but without the
// variable: the token goes over in a pipe whose descriptor number (nothing
// secret) is in CUA_SPACESD_TOKEN_FD. Where that re-execution is impossible,
// the daemon serves on and says so.
func takeEnvToken(log *slog.Logger) (string, error) {
	if fd, ok := os.LookupEnv(tokenFDEnv); ok {
		_ = os.Unsetenv(tokenFDEnv)
		return readTokenFD(fd)
	}
	tok := os.Getenv(tokenEnv)
	if tok == "" {
		_ = os.Unsetenv(tokenEnv)
		return "", nil
	}
	if len(tok) > maxEnvTokenBytes {
		return "", fmt.Errorf("%s is over %d bytes", tokenEnv, maxEnvTokenBytes)
	}
	err := reexecWithoutToken(tok) // returns only when it failed
	// No child may inherit the token, re-executed or not.
	_ = os.Unsetenv(tokenEnv)
	log.Warn("the token stays readable in this process's initial environment (/proc/<pid>/environ); give it with --token-file instead",
		"err", err)
	return tok, nil
}

// reexecWithoutToken executes the daemon's own program again in this
// process, without CUA_SPACESD_TOKEN, the token waiting in a pipe. It
// returns only when it could not.
func reexecWithoutToken(tok string) error {
	self, err := selfProgram()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.WriteString(w, tok)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("token pipe: %w", err)
	}
	// os.Pipe marks both ends close-on-exec; the read end must survive it.
	if _, err := unix.FcntlInt(r.Fd(), unix.F_SETFD, 0); err != nil {
		return fmt.Errorf("token pipe: %w", err)
	}
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, tokenEnv+"=") && !strings.HasPrefix(kv, tokenFDEnv+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, tokenFDEnv+"="+strconv.Itoa(int(r.Fd())))
	err = syscall.Exec(self, os.Args, env)
	return fmt.Errorf("re-execute %s: %w", self, err)
}

// selfProgram is the program this process runs. On Linux /proc/self/exe
// names it even when its file was replaced or removed since it started.
func selfProgram() (string, error) {
	if runtime.GOOS == "linux" {
		if _, err := os.Stat("/proc/self/exe"); err == nil {
			return "/proc/self/exe", nil
		}
	}
	return os.Executable()
}

// readTokenFD reads the token handed over by reexecWithoutToken and closes
// the descriptor, so that no child inherits it.
func readTokenFD(text string) (string, error) {
	fd, err := strconv.Atoi(text)
	if err != nil || fd < 3 {
		return "", fmt.Errorf("%s=%q is not a descriptor number", tokenFDEnv, text)
	}
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "token pipe")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxEnvTokenBytes+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("read the token from descriptor %d (%s): %w", fd, tokenFDEnv, err)
	case len(b) > maxEnvTokenBytes:
		return "", fmt.Errorf("the token on descriptor %d is over %d bytes", fd, maxEnvTokenBytes)
	case len(b) == 0:
		return "", errors.New("the token descriptor " + text + " (" + tokenFDEnv + ") holds no token")
	}
	return string(b), nil
}
