package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/hostfs"
	"github.com/trycua/cua-spacesd/bridge/transfer"
)

const cpUsage = "cp [--force] SRC DST   (one side SPACE:/path, the other a local path; files or folders)"

// location is one side of a copy: a path in a Space, or a local path.
type location struct {
	space string // "" = local
	path  string
}

func (l location) String() string {
	if l.space == "" {
		return l.path
	}
	return l.space + ":" + l.path
}

// parseLocation reads "SPACE:/abs/path" as a Space path and anything else as
// a local one. A Space id may hold colons itself (direct:host:port), so the
// split is at the first ":/" with no "/" before it, as scp does; a local
// name with such a colon is written "./name".
func parseLocation(s string) (location, error) {
	if s == "" {
		return location{}, api.Errorf(api.KindInvalidArgument, "empty path")
	}
	if i := strings.Index(s, ":/"); i > 0 && !strings.Contains(s[:i], "/") {
		return location{space: s[:i], path: s[i+1:]}, nil
	}
	if i := strings.LastIndex(s, ":"); i > 0 && !strings.Contains(s[:i], "/") {
		return location{}, api.Errorf(api.KindInvalidArgument,
			"%q: a path in a Space must be absolute (SPACE:/path); write ./%s for a local file", s, s)
	}
	return location{path: s}, nil
}

func (env Env) runCp(ctx context.Context, args []string) int {
	fs := env.newFlags("cp", cpUsage)
	force := fs.Bool("force", false, "replace the destination file if it exists (a folder upload merges into it)")
	fs.BoolVar(force, "f", false, "short for --force")
	pos, rest, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	pos = append(pos, rest...)
	if len(pos) != 2 {
		fs.Usage()
		return ExitUsage
	}
	src, err := parseLocation(pos[0])
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	dst, err := parseLocation(pos[1])
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	switch {
	case src.space != "" && dst.space != "":
		return env.fail(ExitFailure, api.Errorf(api.KindInvalidArgument,
			"cp between two Spaces is not supported: copy to this machine, then on"))
	case src.space == "" && dst.space == "":
		return env.fail(ExitFailure, api.Errorf(api.KindInvalidArgument,
			"neither side is in a Space: write one as SPACE:/path"))
	}
	remote := src
	if dst.space != "" {
		remote = dst
	}
	c, _, err := env.client(remote.space)
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	if err := caps.Require(api.FeatureFiles); err != nil {
		return env.fail(ExitFailure, err)
	}
	bars := &cpBars{stderr: env.Stderr}
	// The person at the command line names their own paths: unconfined.
	s := &transfer.Session{Client: c, Caps: caps, Host: hostfs.Unconfined(), Progress: bars.update}
	var res *transfer.Result
	if dst.space != "" {
		res, err = s.Upload(ctx, src.path, dst.path, transfer.UploadOptions{Overwrite: *force, KeepOnCancel: true})
	} else {
		policy := transfer.Refuse
		if *force {
			policy = transfer.Replace
		}
		res, err = s.Download(ctx, src.path, dst.path, transfer.DownloadOptions{OnExists: policy, KeepPartial: true})
	}
	bars.finish()
	if err != nil {
		return env.fail(ExitFailure, cpError(err))
	}
	fmt.Fprintln(env.Stdout, cpSummary(src, dst, res))
	for _, line := range skipLines(res) {
		fmt.Fprintln(env.Stderr, line)
	}
	return ExitOK
}

// cpError words the transfer's refusals for a person at the command line.
func cpError(err error) error {
	var ex *transfer.ExistsError
	switch {
	case errors.As(err, &ex) && ex.Folder:
		return api.Errorf(api.KindInvalidArgument, "%s exists; cp never replaces a folder, --force neither: remove it or pick another name", ex.Path)
	case errors.As(err, &ex):
		return existsError(ex.Path)
	case api.KindOf(err) == api.KindCancelled:
		e := *api.AsError(err)
		e.Message = strings.Replace(e.Message, "the same copy resumes from there", "run the same cp again to resume", 1)
		return &e
	}
	return err
}

// skipLines name, one a line, what a folder download did not copy.
func skipLines(r *transfer.Result) []string {
	var lines []string
	for _, sk := range r.SkippedEntries {
		switch sk.Reason {
		case transfer.SkipAbsoluteLink:
			lines = append(lines, fmt.Sprintf("skipped %s -> %s: an absolute symlink (it would name a path of this machine)", sk.Path, sk.Target))
		case transfer.SkipOutsideLink:
			lines = append(lines, fmt.Sprintf("skipped %s -> %s: a symlink leading out of the folder", sk.Path, sk.Target))
		default:
			lines = append(lines, fmt.Sprintf("skipped %s: a special file (socket, FIFO or device)", sk.Path))
		}
	}
	if more := r.Skipped - len(r.SkippedEntries); more > 0 {
		lines = append(lines, fmt.Sprintf("skipped %d more", more))
	}
	return lines
}

// cpSummary is the line cp prints for a finished copy.
func cpSummary(src, dst location, r *transfer.Result) string {
	to := r.Dest
	if dst.space != "" {
		to = dst.space + ":" + r.Dest
	}
	what := fmt.Sprintf("%d bytes", r.Bytes)
	if r.Kind == transfer.KindFolder {
		what = fmt.Sprintf("%d files, %d bytes", r.Files, r.Bytes)
		if r.Links > 0 {
			what += fmt.Sprintf(", %d symlinks", r.Links)
		}
		if sk := r.SkipSummary(); sk != "" {
			what += ", " + sk
		}
	}
	sum := "sha256 " + r.SHA256
	if r.Kind == transfer.KindFolder {
		sum = "manifest sha256 " + r.SHA256
	}
	var check string
	switch {
	case dst.space != "":
		check = sum + " verified in Space"
	case r.Verified:
		check = sum + " verified"
	default:
		check = sum + ", size verified (no sha256 tool in the Space)"
	}
	return fmt.Sprintf("%s -> %s (%s, %s)", src, to, what, check)
}

func existsError(p string) error {
	return api.Errorf(api.KindInvalidArgument, "%s exists; pass --force to replace it", p)
}

// cpBars draws one progress bar per phase of a copy (sha256, then upload;
// or download) on a terminal; nothing elsewhere.
type cpBars struct {
	stderr io.Writer
	phase  transfer.Phase
	bar    *progress
}

func (b *cpBars) update(p transfer.Progress) {
	if p.Phase != b.phase {
		b.bar.finish()
		b.phase = p.Phase
		b.bar = newProgress(b.stderr, string(p.Phase)+" "+p.Name, p.Total)
	}
	b.bar.set(p.Done)
}

func (b *cpBars) finish() {
	b.bar.finish()
	b.bar = nil
}
