package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/trycua/cua-spacesd/api"
)

// ShellPath runs the shell form of a command: /bin/sh -c <shell>.
const ShellPath = "/bin/sh"

// hiddenEnv are variables of the daemon's own environment that no child
// ever inherits: the token must not show up in a child's environment (and
// so in /proc/<pid>/environ or `ps e`).
var hiddenEnv = []string{"CUA_SPACESD_TOKEN"}

// BaseEnv returns the environment children inherit: the daemon's own, less
// hiddenEnv. The Manager takes it once at start (the daemon's env does not
// change), which keeps building a command's env off the exec fast path.
func BaseEnv() []string {
	env := os.Environ()
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !isHidden(k) {
			out = append(out, kv)
		}
	}
	return out
}

func isHidden(k string) bool {
	for _, h := range hiddenEnv {
		if k == h {
			return true
		}
	}
	return false
}

// ValidateCommand checks a command before anything runs.
func ValidateCommand(c *api.Command) error {
	switch {
	case len(c.Argv) > 0 && c.Shell != "":
		return api.Errorf(api.KindInvalidArgument, "give either argv or shell, not both")
	case len(c.Argv) == 0 && c.Shell == "":
		return api.Errorf(api.KindInvalidArgument, "give argv (a program and its arguments) or shell (a /bin/sh command line)")
	case len(c.Argv) > 0 && c.Argv[0] == "":
		return api.Errorf(api.KindInvalidArgument, "argv[0] is empty: it names the program to run")
	case c.TimeoutMS < 0:
		return api.Errorf(api.KindInvalidArgument, "timeout_ms=%d must be 0 (none) or positive", c.TimeoutMS)
	}
	for i, a := range c.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return api.Errorf(api.KindInvalidArgument, "argv[%d] contains a NUL byte", i)
		}
	}
	if strings.IndexByte(c.Shell, 0) >= 0 {
		return api.Errorf(api.KindInvalidArgument, "shell contains a NUL byte")
	}
	if strings.IndexByte(c.Cwd, 0) >= 0 {
		return api.Errorf(api.KindInvalidArgument, "cwd contains a NUL byte")
	}
	if c.Cwd != "" && !filepath.IsAbs(c.Cwd) {
		// Relative to what? The daemon's own directory is no contract.
		return api.Errorf(api.KindInvalidArgument, "cwd %q must be an absolute path", c.Cwd)
	}
	for k, v := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return api.Errorf(api.KindInvalidArgument, "env %q: a name must be non-empty without '=' or NUL, a value without NUL", k)
		}
	}
	return nil
}

// Argv is the argv a command runs: its own, or the shell form's.
func Argv(c *api.Command) []string {
	if c.Shell != "" {
		return []string{ShellPath, "-c", c.Shell}
	}
	return c.Argv
}

// buildCmd turns a validated command into an exec.Cmd in its own process
// group (the caller decides Setsid instead for a PTY). The Cmd's path is
// resolved here so that "not found" is a clear error before any fork.
func buildCmd(c *api.Command, base []string) (*exec.Cmd, error) {
	argv := Argv(c)
	cmd := &exec.Cmd{Path: argv[0], Args: argv, Dir: c.Cwd}
	if !strings.Contains(argv[0], "/") {
		p, err := exec.LookPath(argv[0])
		if err != nil {
			return nil, api.Errorf(api.KindNotFound, "program %q not found in PATH", argv[0])
		}
		cmd.Path = p
	}
	cmd.Env = mergeEnv(base, c.Env)
	attr := &syscall.SysProcAttr{Setpgid: true}
	if c.User != "" {
		cred, home, name, err := lookupUser(c.User)
		if err != nil {
			return nil, err
		}
		if cred != nil {
			attr.Credential = cred
			// A login-like environment for that user, unless the caller set it.
			for k, v := range map[string]string{"HOME": home, "USER": name, "LOGNAME": name} {
				if _, set := c.Env[k]; !set && v != "" {
					cmd.Env = setEnv(cmd.Env, k, v)
				}
			}
		}
	}
	cmd.SysProcAttr = attr
	return cmd, nil
}

// mergeEnv lays extra over base; a name in both takes extra's value.
func mergeEnv(base []string, extra map[string]string) []string {
	if len(extra) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := extra[k]; !over {
			out = append(out, kv)
		}
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}

func setEnv(env []string, k, v string) []string {
	for i, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); name == k {
			out := append(env[:i:i], env[i+1:]...)
			return append(out, k+"="+v)
		}
	}
	return append(env[:len(env):len(env)], k+"="+v)
}

// lookupUser finds a user by name or uid. It answers a nil credential when
// that user is the daemon's own (no switch needed).
func lookupUser(who string) (cred *syscall.Credential, home, name string, err error) {
	u, err := user.Lookup(who)
	if err != nil {
		if _, numErr := strconv.ParseUint(who, 10, 32); numErr == nil {
			u, err = user.LookupId(who)
		}
	}
	if err != nil {
		return nil, "", "", api.Errorf(api.KindNotFound, "user %q not found (give a name or a uid)", who)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, "", "", api.Errorf(api.KindInvalidArgument, "user %q has a non-numeric uid or gid", who)
	}
	if int(uid) == os.Getuid() {
		return nil, u.HomeDir, u.Username, nil
	}
	if os.Geteuid() != 0 {
		return nil, "", "", api.Errorf(api.KindPermissionDenied,
			"cannot run as user %q: cua-spacesd runs as uid %d, and only root may switch users", who, os.Geteuid()).
			WithHint("run the command as the daemon's own user, or run cua-spacesd as root")
	}
	cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				cred.Groups = append(cred.Groups, uint32(n))
			}
		}
	}
	return cred, u.HomeDir, u.Username, nil
}

// startError turns a failed fork/exec into an error a person can act on.
func startError(c *api.Command, argv, env []string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "chdir" {
		return api.Errorf(api.KindInvalidArgument, "cwd %s: %v", c.Cwd, pe.Err)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if c.Cwd != "" {
			if _, serr := os.Stat(c.Cwd); serr != nil {
				return api.Errorf(api.KindInvalidArgument, "cwd %s does not exist", c.Cwd)
			}
		}
		return api.Errorf(api.KindNotFound, "program %s not found", argv[0])
	case errors.Is(err, fs.ErrPermission):
		return api.Errorf(api.KindPermissionDenied, "cannot run %s: %v", argv[0], err)
	case errors.Is(err, syscall.E2BIG):
		// The same call fails the same way: not retryable, and not the
		// daemon's environment (env) but the request's size.
		return api.Errorf(api.KindInvalidArgument,
			"cannot run %s: its argv and environment together (%d bytes) are too long for the kernel (E2BIG)",
			argv[0], argvEnvBytes(argv, env)).
			WithHint("pass long data on stdin or in a file instead of the command line or env")
	}
	return api.Errorf(api.KindEnv, "start %s: %w", argv[0], fmt.Errorf("%w", err))
}

// argvEnvBytes is what argv and env take in the new program's memory: each
// string and its NUL.
func argvEnvBytes(argv, env []string) int {
	n := 0
	for _, s := range argv {
		n += len(s) + 1
	}
	for _, s := range env {
		n += len(s) + 1
	}
	return n
}
