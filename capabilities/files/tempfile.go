package files

import (
	"errors"
	"io"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// writeInfix marks a named temp file of a write: ".<name>.cua-write-<hex>".
const writeInfix = ".cua-write-"

// errNoUnnamed: the file system cannot make an unnamed file (O_TMPFILE).
var errNoUnnamed = errors.New("unnamed temp files are not supported here")

// errCannotLink: an unnamed file cannot be given a name here (neither
// /proc/self/fd nor AT_EMPTY_PATH is available to us).
var errCannotLink = errors.New("cannot link an unnamed file")

// tempFile is the new content of a file while it is written, in the
// destination's directory. Unnamed (O_TMPFILE) where the file system
// allows it, so that a crash leaves nothing behind; else a named temp file.
type tempFile struct {
	d    *dir
	f    *os.File
	name string // "" while unnamed
	// forget is called once the named temp file is gone (renamed into
	// place or removed), so that its record in the journal goes too.
	forget func()
	j      *Journal
	closed bool
}

// newTempFile starts the new content of base in d. A named temp file is
// recorded in the journal (when there is one) before it is made, so that
// the next start removes it if the daemon dies first.
func newTempFile(d *dir, base string, allowUnnamed bool, j *Journal) (*tempFile, error) {
	if allowUnnamed {
		f, err := openUnnamed(d)
		if err == nil {
			return &tempFile{d: d, f: f, j: j}, nil
		}
		if !errors.Is(err, errNoUnnamed) {
			return nil, err
		}
	}
	t := &tempFile{d: d, j: j}
	if err := t.create(tempName(base)); err != nil {
		return nil, err
	}
	return t, nil
}

// create makes the named temp file name, recorded first.
func (t *tempFile) create(name string) error {
	forget := t.j.recordTemp(t.d, name)
	f, err := createAt(t.d, name)
	if err != nil {
		if forget != nil {
			forget()
		}
		return err
	}
	t.f, t.name, t.forget, t.closed = f, name, forget, false
	return nil
}

func tempName(base string) string { return "." + shortName(base, writeInfix+randomHex(8)) }

// createAt creates a new file readable only by us until its mode is set.
func createAt(d *dir, name string) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path.Join(d.path, name)), nil
}

func (t *tempFile) close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	return t.f.Close()
}

// discard drops what is left: the open file, and a named temp file that
// was not renamed into place.
func (t *tempFile) discard() {
	t.close()
	if t.name != "" {
		_ = unix.Unlinkat(t.d.fd, t.name, 0)
		t.gone()
	}
}

func (t *tempFile) gone() {
	t.name = ""
	if t.forget != nil {
		t.forget()
		t.forget = nil
	}
}

// commit gives the file its mode and owner, makes it durable and puts it at
// name in its directory, replacing what is there when overwrite is set,
// else failing with os.ErrExist. fsync before the rename: a crash must
// leave the old file or the new one, never a mix; fsync of the directory
// after: the rename itself must survive a crash too.
func (t *tempFile) commit(m fileMeta, name string, overwrite bool) error {
	// Closed only once applied and synced: a commit again after one that
	// found the name taken goes straight to the rename.
	if !t.closed {
		if err := m.apply(t.f); err != nil {
			return err
		}
		if err := t.f.Sync(); err != nil {
			return err
		}
	}
	if t.name == "" && !overwrite {
		// An unnamed file linked straight to its name: the link fails if
		// the name exists, so nothing is replaced.
		err := linkUnnamed(t.f, t.d, name)
		switch {
		case err == nil:
			if err := t.close(); err != nil {
				return err
			}
			return t.d.sync()
		case errors.Is(err, unix.EEXIST):
			return os.ErrExist
		case !errors.Is(err, errCannotLink):
			return err
		}
	}
	if t.name == "" {
		// rename(2) replaces; a link cannot. Name the file first: a crash
		// between the two leaves this one temp file, for a moment.
		if err := t.nameIt(m, name); err != nil {
			return err
		}
	}
	if err := t.close(); err != nil {
		return err
	}
	var err error
	if overwrite {
		err = unix.Renameat(t.d.fd, t.name, t.d.fd, name)
	} else {
		err = renameNoReplace(t.d, t.name, t.d, name)
	}
	if err != nil {
		return err
	}
	t.gone()
	return t.d.sync()
}

// nameIt gives an unnamed file a temp name, by a link where we may, else
// by copying it into a new named file.
func (t *tempFile) nameIt(m fileMeta, base string) error {
	name := tempName(base)
	err := linkUnnamed(t.f, t.d, name)
	if err == nil {
		t.name = name
		return nil
	}
	if !errors.Is(err, errCannotLink) {
		return err
	}
	// A copy takes a while: record it as any named temp file. create
	// replaces t.f only when it succeeds.
	old := t.f
	if err := t.create(name); err != nil {
		return err
	}
	defer old.Close()
	if _, err := old.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.Copy(t.f, old); err != nil {
		return err
	}
	if err := m.apply(t.f); err != nil {
		return err
	}
	return t.f.Sync()
}
