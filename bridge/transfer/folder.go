package transfer

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/hostfs"
)

// folderEntry is one checked entry of a folder download.
type folderEntry struct {
	rel  string // slash-separated, clean, inside the folder
	info api.FileInfo
}

// folderPlan is what a folder download makes, from a checked listing.
type folderPlan struct {
	dirs, files, links []folderEntry // each sorted by rel
	skips              []Skip        // sorted by path
	bytes              int64
}

// maxFolderLinkHops bounds the symlinks followed in resolving one link of
// a downloaded folder: Linux's own limit (40; others' is lower), so a
// resolution that hops that often without leaving the folder is one the
// kernel refuses too.
const maxFolderLinkHops = 40

// planFolder checks the listing of src. The Space may be someone else's (a
// shared relay Space), so nothing in it is trusted: an entry outside src, a
// name that climbs out with "..", two entries of one name, or an entry
// below something that is not a listed folder (a symlink, a file) fails the
// download before anything is written.
func planFolder(src string, entries []api.FileInfo) (*folderPlan, error) {
	p := &folderPlan{}
	prefix := strings.TrimSuffix(src, "/") + "/"
	kinds := map[string]api.FileType{}
	var all []folderEntry
	bad := func(e api.FileInfo, why string) error {
		return api.Errorf(api.KindTransferFailed, "download %s: the Space listed %q, %s; nothing was kept", src, e.Path, why)
	}
	for _, e := range entries {
		if e.Path == src {
			continue
		}
		rel, under := strings.CutPrefix(e.Path, prefix)
		if !under || !filepath.IsLocal(filepath.FromSlash(rel)) || path.Clean(rel) != rel || strings.ContainsRune(rel, 0) {
			return nil, bad(e, "which is not inside the folder")
		}
		if _, dup := kinds[rel]; dup {
			return nil, bad(e, "twice")
		}
		kinds[rel] = e.Type
		all = append(all, folderEntry{rel: rel, info: e})
	}
	targets := map[string]string{}
	for _, e := range all {
		if e.info.Type == api.TypeSymlink {
			targets[e.rel] = e.info.Target
		}
	}
	for _, e := range all {
		if dir := path.Dir(e.rel); dir != "." && kinds[dir] != api.TypeDir {
			return nil, bad(e.info, "which is not below a listed folder")
		}
		switch e.info.Type {
		case api.TypeDir:
			if strings.Count(e.rel, "/")+1 >= listDepth {
				return nil, api.Errorf(api.KindTransferFailed, "download %s: %s is %d levels deep, and the Space lists no deeper; download it apart",
					src, e.info.Path, listDepth)
			}
			p.dirs = append(p.dirs, e)
		case api.TypeFile:
			p.files = append(p.files, e)
			p.bytes += e.info.Size
		case api.TypeSymlink:
			if e.info.Target == "" || strings.ContainsRune(e.info.Target, 0) {
				return nil, bad(e.info, "a symlink without a usable target")
			}
			if why := leadsOut(kinds, targets, e.rel); why != "" {
				p.skips = append(p.skips, Skip{Path: e.rel, Reason: why, Target: e.info.Target})
				continue
			}
			p.links = append(p.links, e)
		default:
			p.skips = append(p.skips, Skip{Path: e.rel, Reason: SkipSpecialFile})
		}
	}
	for _, l := range [][]folderEntry{p.dirs, p.files, p.links} {
		sort.Slice(l, func(i, j int) bool { return l[i].rel < l[j].rel })
	}
	sort.Slice(p.skips, func(i, j int) bool { return p.skips[i].Path < p.skips[j].Path })
	return p, nil
}

// leadsOut says why the symlink rel of the folder would lead out of it once
// made here ("" when it stays inside): an absolute target names a place on
// this machine (/etc, $CUA_HOME), not the Space's. A relative one is
// resolved as the kernel will, within the folder as listed: ".." from the
// link's own folder, through the folder's other links (one to an ancestor
// makes a later ".." climb out, which the target's text alone does not
// show); a name not in the listing is taken as written. kinds and targets
// are the listing's, by rel.
func leadsOut(kinds map[string]api.FileType, targets map[string]string, rel string) string {
	target := targets[rel]
	if path.IsAbs(target) {
		return SkipAbsoluteLink
	}
	var cur []string // resolved: folders of the listing, or names beyond it
	if dir := path.Dir(rel); dir != "." {
		cur = strings.Split(dir, "/")
	}
	rest := strings.Split(target, "/")
	hops := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return SkipOutsideLink
			}
			cur = cur[:len(cur)-1]
			continue
		}
		next := strings.Join(append(cur[:len(cur):len(cur)], c), "/")
		if kinds[next] != api.TypeSymlink {
			cur = append(cur, c)
			continue
		}
		// A link of the folder: its target, from the folder holding it.
		if hops++; hops > maxFolderLinkHops {
			// A loop, each hop inside: here as in the Space, the kernel
			// gives up (ELOOP) by this many, before it gets anywhere.
			return ""
		}
		t := targets[next]
		if path.IsAbs(t) {
			return SkipOutsideLink
		}
		rest = append(strings.Split(t, "/"), rest...)
	}
	return ""
}

// downloadFolder assembles src in a temporary folder next to name, then
// moves it into place in one step. Files are written into folders the
// download made itself (0700 until the end), symlinks are made after every
// file, and no step follows a link: a link cannot redirect a write.
func (s *Session) downloadFolder(ctx context.Context, src string, info *api.FileInfo, parent *hostfs.Dir, name string, o DownloadOptions, res *Result) (string, error) {
	list, err := s.Client.List(ctx, src, listDepth, true)
	if err != nil {
		return "", err
	}
	if list.Truncated {
		return "", api.Errorf(api.KindTransferFailed, "download %s: the folder has more entries than the Space lists at once; download its subfolders one by one", src)
	}
	plan, err := planFolder(src, list.Entries)
	if err != nil {
		return "", err
	}
	tmpName, tmp, err := parent.MkdirTemp(shortName(name, tempInfix, 12))
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		tmp.Close()
		if !ok {
			_ = parent.RemoveAll(tmpName)
		}
	}()
	for _, d := range plan.dirs {
		sub, err := tmp.MkdirAll(d.rel)
		if err != nil {
			return "", err
		}
		sub.Close()
	}
	t := s.track(PhaseDownload, path.Base(src), plan.bytes)
	var done int64
	var manifest strings.Builder
	for _, f := range plan.files {
		sum, verified, err := s.fetchNew(ctx, tmp, src, f, func(k int64) { t.set(done + k) })
		if err != nil {
			if ctx.Err() != nil {
				return "", cancelled(ctx, "download of "+src, t.done, plan.bytes, false)
			}
			return "", err
		}
		res.Verified = res.Verified && verified
		fmt.Fprintf(&manifest, "%s  %s\n", sum, f.rel)
		done += f.info.Size
		res.Files++
		res.Bytes += f.info.Size
	}
	for _, l := range plan.links {
		if err := inDir(tmp, l.rel, func(d *hostfs.Dir, base string) error { return d.Symlink(l.info.Target, base) }); err != nil {
			return "", err
		}
	}
	res.Links, res.Skipped = len(plan.links), len(plan.skips)
	res.SkippedEntries = plan.skips[:min(len(plan.skips), MaxSkipsListed)]
	// Folder modes last, children before parents, so that a read-only
	// folder does not stop its own filling; the temporary folder (0700)
	// takes the source folder's mode.
	for i := len(plan.dirs) - 1; i >= 0; i-- {
		d := plan.dirs[i]
		if m, ok := localMode(d.info.Mode); ok {
			sub, err := tmp.OpenDir(d.rel)
			if err != nil {
				return "", err
			}
			err = sub.Chmod(m)
			sub.Close()
			if err != nil {
				return "", err
			}
		}
	}
	if m, ok := localMode(info.Mode); ok {
		if err := tmp.Chmod(m); err != nil {
			return "", err
		}
	}
	final, err := place(parent, tmpName, name, o.OnExists, true)
	if err != nil {
		return "", err
	}
	ok = true
	res.SHA256 = manifestSum(manifest.String())
	return final, nil
}

// fetchNew downloads one file of a folder into a new file of the
// temporary tree, verifies it and answers its sha256.
func (s *Session) fetchNew(ctx context.Context, tmp *hostfs.Dir, src string, e folderEntry, report func(int64)) (string, bool, error) {
	var sum string
	var verified bool
	err := inDir(tmp, e.rel, func(d *hostfs.Dir, base string) error {
		f, err := d.Create(base, partialMode)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		remote := path.Join(src, e.rel)
		trailer, err := s.fetch(ctx, remote, e.info.Size, f, h, 0, report)
		if err != nil {
			return err
		}
		if sum, verified, err = s.verify(ctx, remote, h, trailer); err != nil {
			return err
		}
		return finishFile(f, e.info.Mode)
	})
	return sum, verified, err
}

// inDir runs fn on the folder holding rel (below root) and rel's base name.
func inDir(root *hostfs.Dir, rel string, fn func(d *hostfs.Dir, base string) error) error {
	dir, base := path.Split(rel)
	if dir == "" {
		return fn(root, base)
	}
	sub, err := root.OpenDir(dir)
	if err != nil {
		return err
	}
	defer sub.Close()
	return fn(sub, base)
}

// shortName is "." + name + tag, name shortened (with a hash of it kept)
// so that the whole, plus reserve bytes the caller appends, fits a file
// name.
func shortName(name, tag string, reserve int) string {
	if n := 1 + len(name) + len(tag) + reserve; n > maxNameBytes {
		sum := sha256.Sum256([]byte(name))
		keep := max(maxNameBytes-1-len(tag)-reserve-17, 0)
		name = name[:keep] + "~" + fmt.Sprintf("%x", sum[:8])
	}
	return "." + name + tag
}
