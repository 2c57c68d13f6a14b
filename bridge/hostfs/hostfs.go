// Package hostfs is the bridge's access to the files of the machine it runs
// on. The human CLI uses it unconfined: a person names their own paths. The
// MCP tools use it confined to the folders the user named (roots), never in
// $CUA_HOME or the bridge's token file, even when a root holds them: an agent
// may be steered by what it reads, and the registry holds every Space's
// token.
//
// A confined path is resolved (symlinks and "..") before it is checked, then
// opened component by component from its root without following any symlink
// (openat with O_NOFOLLOW), so a link swapped in between the check and the
// open fails the open instead of leading elsewhere. Either way, work inside a
// directory goes through the open directory (Dir) and never follows a
// symlink: a link planted in a tree being written cannot redirect a write.
package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
)

// dirPerm is the mode of directories created for a download's parents.
const dirPerm fs.FileMode = 0o755

// FS is the host file system as one surface may use it. The zero value is
// not usable; build one with Unconfined or Confined.
type FS struct {
	// roots are resolved absolute directories; nil means unconfined.
	roots []string
	deny  []denied
}

// Deny names a path the confined FS refuses even inside a root.
type Deny struct {
	Path string
	// What names it in errors ("$CUA_HOME", "the bridge's token file").
	What string
}

type denied struct {
	path string // resolved, absolute
	what string
}

// fileID is the identity of a file, whatever its path.
type fileID struct{ dev, ino uint64 }

// Unconfined is the FS of the human CLI: any path the user may reach.
func Unconfined() *FS { return &FS{} }

// Confined is the FS of the MCP tools: paths under roots (at least one; each
// an existing directory) and not under any deny. A root inside a denied
// path is refused.
func Confined(roots []string, deny ...Deny) (*FS, error) {
	if len(roots) == 0 {
		return nil, api.Errorf(api.KindInvalidArgument, "no root folder given: name at least one folder the tools may use")
	}
	h := &FS{}
	for _, d := range deny {
		p, err := resolveMaybeMissing(d.Path)
		if err != nil {
			return nil, err
		}
		h.deny = append(h.deny, denied{path: p, what: d.What})
	}
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, api.Errorf(api.KindInvalidArgument, "root %s: %w", r, err)
		}
		p, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, api.Errorf(api.KindInvalidArgument, "root %s: %w", r, err)
		}
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			return nil, api.Errorf(api.KindInvalidArgument, "root %s is not a directory", r)
		}
		if d, ok := h.denied(p); ok {
			return nil, api.Errorf(api.KindInvalidArgument, "root %s is inside %s (%s), which the tools never use", r, d.what, d.path)
		}
		h.roots = append(h.roots, p)
	}
	return h, nil
}

// Confined reports whether paths are limited to roots.
func (h *FS) Confined() bool { return h.roots != nil }

// Roots are the folders a confined FS allows (resolved); nil when unconfined.
func (h *FS) Roots() []string { return append([]string(nil), h.roots...) }

// Abs makes p absolute: a relative path is taken in the first root when
// confined (the folder the user gave the tools), in the working directory
// otherwise.
func (h *FS) Abs(p string) (string, error) {
	if p == "" {
		return "", api.Errorf(api.KindInvalidArgument, "empty path")
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	if h.Confined() {
		return filepath.Join(h.roots[0], p), nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", api.Errorf(api.KindIO, "%s: %w", p, err)
	}
	return abs, nil
}

// Stat describes an existing path, following symlinks. When confined, the
// path is checked first, so a path outside the roots is refused whether or
// not it exists.
func (h *FS) Stat(p string) (fs.FileInfo, error) {
	abs, err := h.Abs(p)
	if err != nil {
		return nil, err
	}
	if h.Confined() {
		real, err := resolveMaybeMissing(abs)
		if err != nil {
			return nil, err
		}
		if _, _, err := h.check(p, real); err != nil {
			return nil, err
		}
		abs = real
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, pathError("stat", abs, err)
	}
	return fi, nil
}

// Open opens an existing file or directory to read it. Unconfined, the path
// is opened as the user wrote it (symlinks followed). Confined, it is
// resolved, checked and opened from its root without following a link. A
// FIFO or device does not block the open (O_NONBLOCK): the caller looks at
// what it got before reading.
func (h *FS) Open(p string) (*os.File, error) {
	abs, err := h.Abs(p)
	if err != nil {
		return nil, err
	}
	if !h.Confined() {
		f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return nil, pathError("open", abs, err)
		}
		return f, nil
	}
	// Checked before anything says whether it exists: outside the roots,
	// a missing path is refused as an existing one is.
	real, err := resolveMaybeMissing(abs)
	if err != nil {
		return nil, err
	}
	root, rel, err := h.check(p, real)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		d, err := h.openRoot(root)
		if err != nil {
			return nil, err
		}
		return d.f, nil
	}
	parent, err := h.walk(root, filepath.Dir(rel), false)
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	return parent.Open(filepath.Base(rel))
}

// AsDir takes over a directory that Open answered.
func (h *FS) AsDir(f *os.File) *Dir { return &Dir{h: h, f: f, path: f.Name()} }

// OpenDir opens the directory p, for reading or for writing into it; with
// parents, missing directories on the way are made (0755). Confined, p is
// checked and walked from its root without following a link.
func (h *FS) OpenDir(p string, parents bool) (*Dir, error) {
	abs, err := h.Abs(p)
	if err != nil {
		return nil, err
	}
	if !h.Confined() {
		if parents {
			if err := os.MkdirAll(abs, dirPerm); err != nil {
				return nil, pathError("mkdir", abs, err)
			}
		}
		f, err := os.Open(abs)
		if err != nil {
			return nil, pathError("open", abs, err)
		}
		if fi, err := f.Stat(); err != nil || !fi.IsDir() {
			f.Close()
			return nil, api.Errorf(api.KindInvalidArgument, "%s is not a directory", abs)
		}
		return &Dir{h: h, f: f, path: abs}, nil
	}
	real, err := resolveMaybeMissing(abs)
	if err != nil {
		return nil, err
	}
	root, rel, err := h.check(p, real)
	if err != nil {
		return nil, err
	}
	return h.walk(root, rel, parents)
}

// check finds the root holding real (a resolved path) and refuses denied
// paths; it answers the root and real relative to it. p is the path as the
// caller gave it, for the message.
func (h *FS) check(p, real string) (root, rel string, err error) {
	if d, ok := h.denied(real); ok {
		return "", "", api.Errorf(api.KindInvalidArgument,
			"path %s is inside %s (%s), which the MCP tools never read or write", p, d.what, d.path).
			WithHint("use a path under " + h.rootList())
	}
	for _, r := range h.roots {
		if within(real, r) {
			rel, err := filepath.Rel(r, real)
			if err != nil {
				return "", "", api.Errorf(api.KindInvalidArgument, "path %s: %w", p, err)
			}
			return r, rel, nil
		}
	}
	shown := p
	if real != p {
		shown = fmt.Sprintf("%s (%s)", p, real)
	}
	return "", "", api.Errorf(api.KindInvalidArgument,
		"path %s is outside the folders the bridge's tools may use: %s", shown, h.rootList()).
		WithHint("pass a path under one of them; the user widens them with --root DIR (or CUA_BRIDGE_ROOTS) when starting the bridge")
}

func (h *FS) rootList() string { return strings.Join(h.roots, ", ") }

// denied reports the deny that covers p (resolved): the path itself or,
// for a directory, anything under it.
func (h *FS) denied(p string) (denied, bool) {
	for _, d := range h.deny {
		if within(p, d.path) {
			return d, true
		}
	}
	return denied{}, false
}

// deniedID reports the deny whose file is id now. A path check alone misses
// a denied directory reached another way (a bind mount, a rename racing
// the walk); the identity does not.
func (h *FS) deniedID(id fileID) (denied, bool) {
	for _, d := range h.deny {
		var st unix.Stat_t
		if unix.Stat(d.path, &st) == nil && idOf(&st) == id {
			return d, true
		}
	}
	return denied{}, false
}

// within reports whether p is dir or under it; both are clean and absolute.
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// maxLinks bounds the symlinks followed in resolving one path, as the
// kernel's own limit (40) does.
const maxLinks = 40

// resolveMaybeMissing resolves p's symlinks, one component at a time, as
// far as they resolve, and appends the rest as written: where p would land
// if made. A component that cannot be resolved (missing, under a file, out
// of reach, a dangling link or a loop) ends the resolution, whatever the
// reason, so that what a confined FS answers for a path outside its roots
// says nothing of what is there; a path inside them then fails its open
// with the real reason.
func resolveMaybeMissing(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", api.Errorf(api.KindInvalidArgument, "path %s: %w", p, err)
	}
	cur := "/" // resolved: no symlink in it
	rest := strings.Split(abs, "/")
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err == nil && fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		var target string
		if err == nil && links < maxLinks {
			target, err = os.Readlink(next)
		}
		if err != nil || target == "" || links >= maxLinks {
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		links++
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return cur, nil
}

// openRoot opens a root directory (resolved when configured).
func (h *FS) openRoot(root string) (*Dir, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, pathError("open", root, err)
	}
	d := &Dir{h: h, f: os.NewFile(uintptr(fd), root), path: root}
	if err := d.refuseDenied(d.f); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// walk opens root/rel one component at a time, never following a symlink.
func (h *FS) walk(root, rel string, parents bool) (*Dir, error) {
	d, err := h.openRoot(root)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return d, nil
	}
	sub, err := d.openDirs(rel, parents)
	d.Close()
	return sub, err
}

// pathError wraps a local file error with a kind: not_found for a missing
// path, invalid_argument for a symlink met where none may be followed, io
// otherwise.
func pathError(op, p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return api.Errorf(api.KindNotFound, "%s %s: %w", op, p, err).WithHint("check the path on this machine")
	case errors.Is(err, syscall.ELOOP):
		return api.Errorf(api.KindInvalidArgument, "%s %s: a symlink is in the way, and the bridge does not follow one here", op, p).WithCause(err)
	}
	return api.Errorf(api.KindIO, "%s %s: %w", op, p, err)
}
