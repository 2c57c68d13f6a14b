package files

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// Limits of a listing. MaxListEntries bounds the answer so a listing of "/"
// with a big depth cannot exhaust the daemon's memory; the answer then says
// Truncated and the caller lists a narrower directory.
const (
	MaxListEntries = 10_000
	MaxListDepth   = api.MaxListDepth
)

// List lists a directory to depth levels (1 = its own entries), in
// depth-first order with each directory's entries sorted by name. Names
// starting with "." are skipped unless hidden is set. Symlinks to
// directories are listed, not followed, so a loop cannot trap the walk.
func List(ctx context.Context, path string, depth int, hidden bool) (api.ListResult, error) {
	p, err := CleanPath("path", path)
	if err != nil {
		return api.ListResult{}, err
	}
	if depth < 1 || depth > MaxListDepth {
		return api.ListResult{}, api.Errorf(api.KindInvalidArgument, "depth %d is out of range; use 1 to %d", depth, MaxListDepth)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return api.ListResult{}, fsError("list", p, err)
	}
	if !fi.IsDir() {
		return api.ListResult{}, api.Errorf(api.KindInvalidArgument, "list %s: not a directory; use stat for a file", p)
	}
	res := api.ListResult{Path: p, Entries: []api.FileInfo{}}
	if err := listInto(ctx, &res, p, depth, hidden, true); err != nil {
		return api.ListResult{}, err
	}
	return res, nil
}

// listBatch is how many entries a listing reads from a directory at a
// time: a directory of millions is read only as far as the answer needs.
const listBatch = 1024

// listInto appends dir's entries (and below, to depth) to res. Errors below
// the top directory (a subdirectory we may not read) are skipped: one
// unreadable corner must not hide the rest of the tree. Only as many
// entries as still fit in the answer are read (plus one, to know whether
// it is cut), so when a directory is cut, its entries shown are the first
// ones in the directory's own order, sorted: not the first by name, which
// would need every name read.
func listInto(ctx context.Context, res *api.ListResult, dir string, depth int, hidden, top bool) error {
	if err := ctx.Err(); err != nil {
		return api.Errorf(api.KindCancelled, "list %s: %w", dir, err)
	}
	f, err := os.Open(dir)
	if err != nil {
		if top {
			return fsError("list", dir, err)
		}
		return nil
	}
	defer f.Close()
	room := MaxListEntries - len(res.Entries)
	var ents []fs.DirEntry
	cut := false
	for !cut {
		batch, err := f.ReadDir(listBatch)
		for _, e := range batch {
			if !hidden && strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if len(ents) == room {
				cut = true
				break
			}
			ents = append(ents, e)
		}
		if errors.Is(err, io.EOF) || len(batch) == 0 {
			break
		}
		if err != nil {
			if top {
				return fsError("list", dir, err)
			}
			break
		}
		if err := ctx.Err(); err != nil {
			return api.Errorf(api.KindCancelled, "list %s: %w", dir, err)
		}
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range ents {
		if len(res.Entries) >= MaxListEntries {
			// The subdirectories before took the room.
			res.Truncated = true
			return nil
		}
		p := filepath.Join(dir, e.Name())
		fi, err := e.Info()
		if err != nil {
			continue // removed while we listed
		}
		res.Entries = append(res.Entries, infoOf(p, fi))
		if depth > 1 && e.IsDir() {
			if err := listInto(ctx, res, p, depth-1, hidden, false); err != nil {
				return err
			}
			if res.Truncated {
				return nil
			}
		}
	}
	if cut {
		res.Truncated = true
	}
	return nil
}
