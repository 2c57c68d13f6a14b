// Package process is cua-spacesd's process capability, usable without HTTP:
// one-shot Exec, detached processes (argv or shell form, env, cwd, user,
// stdin, PTY) that outlive the call that started them, a bounded output
// ring per stream with absolute byte offsets, signals by name, and timeouts
// that kill the whole process tree.
//
// Every process runs in its own process group (a PTY process in its own
// session, which is also its own group), so kill(-pgid) reaches the leader
// and everything it started that did not leave the group on purpose.
package process
