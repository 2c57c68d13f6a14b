//go:build !linux

package cgroup

import (
	"errors"
	"syscall"
)

var errNotLinux = errors.New("cgroups are Linux's: processes stay in process groups")

// Tree is the daemon's subtree of cgroups; Open always fails off Linux.
type Tree struct{}

// Group is the cgroup of one process tree.
type Group struct{}

// Open fails: there are no cgroups here.
func Open(Config) (*Tree, error) { return nil, errNotLinux }

// DefaultLimits are zero: nothing is enforced here.
func DefaultLimits() (group, all Limits) { return Limits{}, Limits{} }

// Info is ModeOff.
func (*Tree) Info() Info { return Info{Mode: ModeOff, Note: errNotLinux.Error()} }

// New fails.
func (*Tree) New(string) (*Group, error) { return nil, errNotLinux }

// Take fails.
func (*Tree) Take() (*Group, error) { return nil, errNotLinux }

// Release does nothing.
func (*Tree) Release(*Group) {}

// Close does nothing.
func (*Tree) Close() error { return nil }

// Dirs is empty.
func (*Group) Dirs() []string { return nil }

// Start fails.
func (*Group) Start(*syscall.SysProcAttr, func() error) error { return errNotLinux }

// Kill fails.
func (*Group) Kill() error { return errNotLinux }

// Signal fails.
func (*Group) Signal(syscall.Signal) (int, error) { return 0, errNotLinux }

// Holds is false.
func (*Group) Holds(int) bool { return false }

// Procs is empty.
func (*Group) Procs() ([]int, error) { return nil, nil }

// Populated is false.
func (*Group) Populated() (bool, error) { return false, nil }

// Remove does nothing.
func (*Group) Remove() error { return nil }

// Procs is a look at every process.
type Procs struct{}

// ReadProcs reads nothing.
func ReadProcs() *Procs { return nil }

// Strays is empty.
func (*Group) Strays(*Procs, int) []Stray { return nil }

// Signal does nothing.
func (Stray) Signal(syscall.Signal) bool { return false }
