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
	// place or removed), so a record of it can go too.
	forget func()
	closed bool
}

// newTempFile starts the new content of base in d.
func newTempFile(d *dir, base string, allowUnnamed bool) (*tempFile, error) {
	if allowUnnamed {
		f, err := openUnnamed(d)
		if err == nil {
			return &tempFile{d: d, f: f}, nil
		}
		if !errors.Is(err, errNoUnnamed) {
			return nil, err
		}
	}
	name := tempName(base)
	f, err := createAt(d, name)
	if err != nil {
		return nil, err
	}
	return &tempFile{d: d, f: f, name: name}, nil
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
	if err := m.apply(t.f); err != nil {
		return err
	}
	if err := t.f.Sync(); err != nil {
		return err
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
	nf, err := createAt(t.d, name)
	if err != nil {
		return err
	}
	t.name = name
	if _, err := t.f.Seek(0, io.SeekStart); err != nil {
		nf.Close()
		return err
	}
	_, err = io.Copy(nf, t.f)
	if err == nil {
		err = m.apply(nf)
	}
	if err == nil {
		err = nf.Sync()
	}
	t.close()
	t.f, t.closed = nf, false
	return err
}
