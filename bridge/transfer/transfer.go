// Package transfer copies files and folders between this machine and a
// Space, for the CLI (cp) and the MCP tools (upload, download) alike.
//
// An upload is hashed here first, then sent in chunks the Space resumes from
// its own offset after a failure, and lands only if the Space's sha256 of
// what it received matches (the daemon's commit is atomic). A download
// resumes a partial file named after the remote size and time, is verified
// by the sha256 the daemon sends as a trailer (or by sha256sum in the Space
// for a resumed range), and is moved into place in one step. Folders go
// both ways; a folder download keeps the Space's symlinks that stay inside
// the folder as symlinks (skipping and naming the rest) and never follows
// one while writing.
//
// Local files are reached through a hostfs.FS: unconfined for a person at
// the command line, confined to the user's roots for an agent.
package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/bridge/hostfs"
)

// Limits of a transfer.
const (
	// DefaultChunkBytes is the upload chunk when the Space does not state
	// its limits.upload_chunk_bytes.
	DefaultChunkBytes = 8 << 20
	// maxRetries bounds how often one chunk (or one download range) is
	// retried after a retryable failure before the transfer gives up.
	maxRetries = 5
	// retryBackoff is the pause before a retry.
	retryBackoff = 500 * time.Millisecond
	// abortTimeout bounds the clean-up call after a cancelled upload: the
	// caller's context is gone, the Space should still drop the partial
	// data.
	abortTimeout = 10 * time.Second
	// copyBufBytes is the buffer of a download's copy and of hashing.
	copyBufBytes = 1 << 20
)

// Phase names what a transfer is doing.
type Phase string

// The phases, in the order a transfer goes through them.
const (
	PhaseHash     Phase = "sha256"   // hashing local files before an upload
	PhaseUpload   Phase = "upload"   // sending to the Space
	PhaseDownload Phase = "download" // receiving from the Space
)

// Progress is how far one phase of a transfer is. Done never goes back
// within a phase (a retried range is not counted twice).
type Progress struct {
	Phase Phase
	// Name is what is copied: the source's base name.
	Name string
	// Done and Total are bytes of the phase over the whole transfer (every
	// file of a folder).
	Done, Total int64
}

// Session copies between this machine and one Space.
type Session struct {
	Client *client.Client
	// Caps are the Space's capabilities (its chunk size, whether it has a
	// shell to hash a resumed download with).
	Caps *api.Capabilities
	// Host is this machine's file system as the caller may use it.
	Host *hostfs.FS
	// Progress, when set, is called as the transfer advances, from the
	// goroutine that runs it.
	Progress func(Progress)
}

// Result is what a transfer copied; the MCP tools answer it as is.
type Result struct {
	Source string `json:"source"`
	Dest   string `json:"dest"`
	Kind   string `json:"kind"` // "file" or "folder"
	Files  int    `json:"files"`
	Bytes  int64  `json:"bytes"`
	// SHA256 is the file's sha256; for a folder, the sha256 of its manifest
	// (one "<sha256>  <relative path>\n" line per file, sorted by path).
	SHA256 string `json:"sha256"`
	// Verified: every file's sha256 was checked against the Space's. False
	// only for a download the Space could not hash (no shell, no trailer):
	// its size was checked.
	Verified bool `json:"verified"`
	// Links are the symlinks a folder download recreated: only those that
	// lead to a place inside the folder.
	Links int `json:"links,omitempty"`
	// Skipped counts the entries of a downloaded folder not copied: special
	// files (sockets, FIFOs, devices) and symlinks that lead out of the
	// folder. SkippedEntries name them, the first MaxSkipsListed by path.
	Skipped        int    `json:"skipped,omitempty"`
	SkippedEntries []Skip `json:"skipped_entries,omitempty"`
}

// Skip is an entry of a downloaded folder that was not copied, and why.
type Skip struct {
	// Path is the entry's, relative to the folder (slash-separated).
	Path   string `json:"path"`
	Reason string `json:"reason"`
	// Target is a symlink's, as the Space has it.
	Target string `json:"target,omitempty"`
}

// Reasons of a Skip.
const (
	// SkipSpecialFile: a socket, FIFO or device, which has no content to copy.
	SkipSpecialFile = "special_file"
	// SkipAbsoluteLink: a symlink to an absolute path, which names a place
	// on the Space's machine and would name one on this one (/etc,
	// $CUA_HOME) instead.
	SkipAbsoluteLink = "absolute_symlink"
	// SkipOutsideLink: a relative symlink that leads out of the folder (by
	// "..", or through another link of the folder).
	SkipOutsideLink = "symlink_outside_folder"
)

// MaxSkipsListed bounds Result.SkippedEntries; Result.Skipped counts all.
const MaxSkipsListed = 100

// SkipSummary words what a folder download skipped ("" for nothing), for
// the tools' and cp's one-line reports.
func (r *Result) SkipSummary() string {
	if r.Skipped == 0 {
		return ""
	}
	words := map[string]string{
		SkipAbsoluteLink: "absolute symlinks",
		SkipOutsideLink:  "symlinks leading out of the folder",
		SkipSpecialFile:  "special files",
	}
	var why []string
	for _, reason := range []string{SkipAbsoluteLink, SkipOutsideLink, SkipSpecialFile} {
		for _, sk := range r.SkippedEntries {
			if sk.Reason == reason {
				why = append(why, words[reason])
				break
			}
		}
	}
	return fmt.Sprintf("%d skipped (%s)", r.Skipped, strings.Join(why, ", "))
}

// Kinds of Result.
const (
	KindFile   = "file"
	KindFolder = "folder"
)

// ExistsError is the cause of an invalid_argument error for a destination
// that exists when the options forbid replacing it.
type ExistsError struct {
	Path string
	// Folder is set when the destination is a folder download's: a folder
	// is never replaced, whatever the options.
	Folder bool
}

func (e *ExistsError) Error() string { return e.Path + " exists" }

func errExists(p string, folder bool) error {
	return api.Errorf(api.KindInvalidArgument, "%w", &ExistsError{Path: p, Folder: folder})
}

// tracker reports one phase's progress, never going back.
type tracker struct {
	fn          func(Progress)
	phase       Phase
	name        string
	done, total int64
	started     bool
}

func (s *Session) track(phase Phase, name string, total int64) *tracker {
	t := &tracker{fn: s.Progress, phase: phase, name: name, total: total}
	t.set(0)
	return t
}

// set records that n bytes of the phase are done.
func (t *tracker) set(n int64) {
	if t.started && n <= t.done {
		return
	}
	t.started, t.done = true, n
	if t.fn != nil {
		t.fn(Progress{Phase: t.phase, Name: t.name, Done: n, Total: t.total})
	}
}

// retry reports whether a failed step may be tried again, and waits first.
func retry(ctx context.Context, err error, attempt *int) bool {
	if ctx.Err() != nil || !api.AsError(err).Retryable || *attempt >= maxRetries {
		return false
	}
	*attempt++
	select {
	case <-time.After(retryBackoff):
		return true
	case <-ctx.Done():
		return false
	}
}

// ctxReader stops a local read when the caller goes away: hashing a large
// file takes long, and nothing else would interrupt it.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

// countingReader reports the bytes read through it so far.
type countingReader struct {
	r      io.Reader
	n      int64
	report func(int64)
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	if n > 0 {
		c.report(c.n)
	}
	return n, err
}

// cancelled is the error of a transfer its caller stopped.
func cancelled(ctx context.Context, what string, done, total int64, resumable bool) error {
	msg := fmt.Sprintf("%s interrupted at %d of %d bytes", what, done, total)
	if resumable {
		msg += "; the same copy resumes from there"
	}
	return api.Errorf(api.KindCancelled, "%s: %w", msg, context.Cause(ctx))
}

// isLocal reports an error of this machine's file system (kind io): it is
// not retried, the Space has nothing to do with it.
func isLocal(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Kind == api.KindIO
}
