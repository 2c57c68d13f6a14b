package files

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// Limits of a listing. MaxListEntries bounds the answer so a listing of "/"
// with a big depth cannot exhaust the daemon's memory; the answer then says
// Truncated and the caller lists a narrower directory.
const (
	MaxListEntries = 10_000
	MaxListDepth   = 32
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

// listInto appends dir's entries (and below, to depth) to res. Errors below
// the top directory (a subdirectory we may not read) are skipped: one
// unreadable corner must not hide the rest of the tree.
func listInto(ctx context.Context, res *api.ListResult, dir string, depth int, hidden, top bool) error {
	if err := ctx.Err(); err != nil {
		return api.Errorf(api.KindCancelled, "list %s: %w", dir, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if top {
			return fsError("list", dir, err)
		}
		return nil
	}
	for _, e := range ents {
		if !hidden && strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if len(res.Entries) >= MaxListEntries {
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
	return nil
}
