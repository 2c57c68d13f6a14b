package tools

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/transfer"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
)

// TransferResult is the structured answer of upload and download.
type TransferResult = transfer.Result

// hostPathNote says, in every host path's description, where it may point.
const hostPathNote = "Only under the bridge's root folders (--root; by default the folder it started in), never in $CUA_HOME; " +
	"a relative path is taken in the first root."

func uploadTool(d *Deps) *spacetools.Tool {
	return &spacetools.Tool{
		Name:   "upload",
		Title:  "Upload to a Space",
		Hints:  mcpserve.Hints{Destructive: true, Idempotent: true},
		Output: spacetools.OutputOf[TransferResult](),
		Description: "Copy a local file or folder (on the bridge's machine, under its root folders) into a Space: hashed, then sent in chunks " +
			"that resume after a broken connection, each file's sha256 verified in the Space before it lands atomically. " +
			"Progress notifications are sent when the call carries a progressToken (hashing is the first half). " +
			"If dest is an existing directory (or ends in /) the source goes inside it. A folder's symlinks and special files are refused.",
		Schema: spacetools.Object([]string{"path", "dest"}, map[string]*jsonschema.Schema{
			"path":      spacetools.NonEmpty("Local source path (file or folder) on the bridge's machine. " + hostPathNote),
			"dest":      spacetools.NonEmpty("Absolute destination path in the Space."),
			"overwrite": spacetools.Boolean("Replace existing files at the destination.", true),
		}),
		Requires: []api.Feature{api.FeatureFiles},
		// precondition_failed: the destination appeared in the Space after
		// the tool's own check, without overwrite.
		Errors: []api.Kind{api.KindTransferFailed, api.KindIO, api.KindNotFound, api.KindPreconditionFailed},
		Result: "JSON {source, dest, kind, files, bytes, sha256, verified}",
		Run: func(ctx context.Context, c *spacetools.Call) (*mcpserve.Result, error) {
			var a struct {
				Path, Dest string
				Overwrite  *bool
			}
			if err := spacetools.Decode(c, "upload", &a); err != nil {
				return nil, err
			}
			s, err := d.transferSession(c, "upload", true)
			if err != nil {
				return nil, err
			}
			res, err := s.Upload(ctx, a.Path, a.Dest, transfer.UploadOptions{Overwrite: a.Overwrite == nil || *a.Overwrite})
			if err != nil {
				return nil, err
			}
			return &mcpserve.Result{Text: transferText("uploaded", res), Structured: res}, nil
		},
	}
}

func downloadTool(d *Deps) *spacetools.Tool {
	return &spacetools.Tool{
		Name:  "download",
		Title: "Download from a Space",
		Hints: mcpserve.Hints{},
		// It only reads the Space: a retry downloads again, beside.
		Keyless: true,
		Output:  spacetools.OutputOf[TransferResult](),
		Description: "Copy a file or folder from a Space to the bridge's machine, under its root folders. Never overwrites: an existing name " +
			"becomes \"name (1).ext\". Each file's sha256 is checked against the Space's, and it lands atomically; a broken connection " +
			"resumes where it stopped. A folder's symlinks that stay inside it are recreated as symlinks (never followed while writing); " +
			"absolute ones, ones leading out of the folder and special files are skipped, and listed in skipped_entries with the reason. Progress notifications are sent when the call carries a progressToken. " +
			"If dest is an existing directory (or ends in /) the source goes inside it; missing parent folders are made.",
		Schema: spacetools.Object([]string{"path", "dest"}, map[string]*jsonschema.Schema{
			"path": spacetools.NonEmpty("Absolute source path (file or folder) in the Space."),
			"dest": spacetools.NonEmpty("Local destination path on the bridge's machine. " + hostPathNote),
		}),
		Requires: []api.Feature{api.FeatureFiles},
		Errors:   []api.Kind{api.KindTransferFailed, api.KindIO, api.KindNotFound},
		Result:   "JSON {source, dest, kind, files, bytes, sha256, verified, links?, skipped?, skipped_entries?: [{path, reason, target?}]}",
		Run: func(ctx context.Context, c *spacetools.Call) (*mcpserve.Result, error) {
			var a struct{ Path, Dest string }
			if err := spacetools.Decode(c, "download", &a); err != nil {
				return nil, err
			}
			s, err := d.transferSession(c, "download", false)
			if err != nil {
				return nil, err
			}
			res, err := s.Download(ctx, a.Path, a.Dest, transfer.DownloadOptions{OnExists: transfer.Rename, Parents: true})
			if err != nil {
				return nil, err
			}
			return &mcpserve.Result{Text: transferText("downloaded", res), Structured: res}, nil
		},
	}
}

// progressInterval spaces a transfer's progress notifications: enough to
// draw a bar, few enough that a 1 GiB transfer does not send thousands.
const progressInterval = 100 * time.Millisecond

// transferSession is a transfer with the call's Space, the bridge's host
// folders and the call's progress: at most one report every
// progressInterval, and always the last. An upload's progress counts
// hashing as its first half, so that it only ever grows, as MCP asks.
func (d *Deps) transferSession(c *spacetools.Call, tool string, upload bool) (*transfer.Session, error) {
	if d.Host == nil {
		return nil, api.Errorf(api.KindInvalidArgument, "%s: this bridge gives its tools no folder of this machine", tool).
			WithHint("start the bridge with --root DIR")
	}
	var last float64
	var lastAt time.Time
	sent := false
	var mu sync.Mutex
	report := func(p transfer.Progress) {
		mu.Lock()
		defer mu.Unlock()
		done, total := float64(p.Done), float64(p.Total)
		if upload {
			if p.Phase == transfer.PhaseUpload {
				done += total
			}
			total *= 2
		}
		if sent && (done <= last || done < total && time.Since(lastAt) < progressInterval) {
			return
		}
		sent, last, lastAt = true, done, time.Now()
		c.Progress(done, total, fmt.Sprintf("%s %s", p.Phase, p.Name))
	}
	return &transfer.Session{Client: c.Space.Client, Caps: c.Space.Caps, Host: d.Host, Progress: report}, nil
}

func transferText(verb string, r *transfer.Result) string {
	v := "each file's sha256 verified with the Space"
	if !r.Verified {
		v = "size checked, sha256 not verifiable in this Space"
	}
	extra := ""
	if r.Links > 0 {
		extra += fmt.Sprintf(", %d symlinks", r.Links)
	}
	if sk := r.SkipSummary(); sk != "" {
		extra += ", " + sk
	}
	return fmt.Sprintf("%s %s %s -> %s (%d files, %d bytes%s, sha256 %s, %s)", verb, r.Kind, r.Source, r.Dest, r.Files, r.Bytes, extra, r.SHA256, v)
}
