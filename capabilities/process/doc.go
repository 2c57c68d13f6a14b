// Package process is cua-spacesd's process capability, usable without HTTP:
// one-shot Exec, detached processes (argv or shell form, env, cwd, user,
// stdin, PTY) that outlive the call that started them, a bounded output
// ring per stream with absolute byte offsets, signals by name, and timeouts
// that kill the whole process tree.
//
// Every process runs in a group of its own that holds its whole tree: a
// cgroup (internal/cgroup) made before the process is born and entered at
// birth, bounded by pids.max and memory.max, and killed whole through the
// cgroup, so that setsid, GNU timeout and fork bombs neither escape nor
// take the Space down. Background children of a leader that exited live on
// in that cgroup, listed, counted and signalled under the process they came
// from, until the tree is empty. Where no cgroup is writable the group is
// the leader's process group (a PTY process's session), which kill(-pgid)
// reaches until the leader is reaped, and which setsid leaves.
package process
