package spacetools

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
)

// Bounds of the small-file tools; bigger files go through upload/download.
const (
	// maxReadBytes caps what space_read puts into one answer: an LLM
	// context cannot use more, and download exists for whole files.
	maxReadBytes = 1 << 20
	// maxWriteBytes caps space_write's content for the same reason.
	maxWriteBytes = 16 << 20
	maxListDepth  = 16
)

func spaceReadTool() *Tool {
	return &Tool{
		Name:   "space_read",
		Title:  "Read a file",
		Hints:  mcpserve.Hints{ReadOnly: true},
		Output: OutputOf[ReadResult](),
		Description: fmt.Sprintf("Read a file in a Space (at most %d bytes per call; use offset/length to page, download for whole files). "+
			"Text comes back as is; binary content as base64 with a note.", maxReadBytes),
		Schema: Object([]string{"path"}, map[string]*jsonschema.Schema{
			"path":   NonEmpty("Absolute path of the file in the Space."),
			"offset": Integer("Byte offset to start at.", 0, 0, 0),
			"length": Integer(fmt.Sprintf("Bytes to read (default and maximum %d).", maxReadBytes), 0, maxReadBytes, nil),
		}),
		Requires: []api.Feature{api.FeatureFiles},
		Errors:   []api.Kind{api.KindNotFound, api.KindPermissionDenied, api.KindIO},
		Result:   "text (or base64 with a note for binary); structured {path, size, offset, bytes, encoding, truncated}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				Path   string
				Offset int64
				Length *int64
			}
			if err := Decode(c, "space_read", &a); err != nil {
				return nil, err
			}
			length := int64(maxReadBytes)
			if a.Length != nil {
				length = *a.Length
			}
			body, size, err := c.Space.Client.Read(ctx, a.Path, a.Offset, length)
			if err != nil {
				return nil, err
			}
			defer body.Close()
			data, err := io.ReadAll(io.LimitReader(body, length))
			if err != nil {
				return nil, api.Errorf(api.KindEnv, "space_read %s: %w", a.Path, err)
			}
			truncated := a.Offset+int64(len(data)) < size
			st := ReadResult{Path: a.Path, Size: size, Offset: a.Offset, Bytes: len(data), Encoding: "utf-8", Truncated: truncated}
			text := string(data)
			if !utf8.Valid(data) {
				st.Encoding = "base64"
				text = fmt.Sprintf("[binary content, %d bytes from offset %d of %d, base64]\n%s", len(data), a.Offset, size, base64.StdEncoding.EncodeToString(data))
			} else if truncated && a.Length == nil {
				text += fmt.Sprintf("\n[truncated: %d of %d bytes shown; pass offset=%d to read on]", len(data), size, a.Offset+int64(len(data)))
			}
			return &mcpserve.Result{Text: text, Structured: st}, nil
		},
	}
}

// ReadResult describes what space_read answered: the text is the content.
type ReadResult struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Offset int64  `json:"offset"`
	Bytes  int    `json:"bytes"`
	// Encoding is "utf-8", or "base64" for content that is not text.
	Encoding  string `json:"encoding"`
	Truncated bool   `json:"truncated"`
}

// WriteResult is the structured answer of space_write.
type WriteResult struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Verified: the Space hashed what it wrote and it matches.
	Verified bool `json:"verified"`
}

func spaceWriteTool() *Tool {
	return &Tool{
		Name:   "space_write",
		Title:  "Write a file",
		Hints:  mcpserve.Hints{Destructive: true, Idempotent: true},
		Output: OutputOf[WriteResult](),
		Description: "Write a file in a Space atomically (the old file or the new one, never a mix) and verify its sha256 in the Space. " +
			"Content is text unless encoding is base64.",
		Schema: Object([]string{"path", "content"}, map[string]*jsonschema.Schema{
			"path":     NonEmpty("Absolute path of the file in the Space."),
			"content":  Str("The file's new content."),
			"encoding": Enum("How content is encoded.", "utf-8", "utf-8", "base64"),
			"mode":     Str("Octal permission bits, e.g. \"0644\"; default the old file's or 0644."),
		}),
		Requires: []api.Feature{api.FeatureFiles},
		Errors:   []api.Kind{api.KindTransferFailed, api.KindNotFound, api.KindPermissionDenied, api.KindIO},
		Result:   "wrote <path> (<n> bytes, sha256 <hex> verified in Space); structured {path, bytes, sha256, verified}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct{ Path, Content, Encoding, Mode string }
			if err := Decode(c, "space_write", &a); err != nil {
				return nil, err
			}
			data := []byte(a.Content)
			if a.Encoding == "base64" {
				var err error
				if data, err = base64.StdEncoding.DecodeString(a.Content); err != nil {
					return nil, api.Errorf(api.KindInvalidArgument, "space_write: content is not base64: %v", err)
				}
			}
			if len(data) > maxWriteBytes {
				return nil, api.Errorf(api.KindInvalidArgument, "space_write: %d bytes is over %d; use upload for big files", len(data), maxWriteBytes)
			}
			sum := sha256.Sum256(data)
			want := hex.EncodeToString(sum[:])
			res, err := c.Space.Client.Write(ctx, a.Path, strings.NewReader(string(data)), int64(len(data)), a.Mode)
			if err != nil {
				return nil, err
			}
			if !strings.EqualFold(res.SHA256, want) || res.Size != int64(len(data)) {
				return nil, api.Errorf(api.KindTransferFailed, "space_write %s: the Space stored %d bytes with sha256 %s, want %d bytes with %s",
					a.Path, res.Size, res.SHA256, len(data), want)
			}
			return &mcpserve.Result{
				Text:       fmt.Sprintf("wrote %s (%d bytes, sha256 %s verified in Space)", res.Path, res.Size, res.SHA256),
				Structured: WriteResult{Path: res.Path, Bytes: res.Size, SHA256: res.SHA256, Verified: true},
			}, nil
		},
	}
}

func spaceLsTool() *Tool {
	return &Tool{
		Name:        "space_ls",
		Title:       "List a folder",
		Hints:       mcpserve.Hints{ReadOnly: true},
		Output:      OutputOf[api.ListResult](),
		Description: "List a directory in a Space to a depth (1 = its own entries), with name, type, size, mode and modification time.",
		Schema: Object([]string{"path"}, map[string]*jsonschema.Schema{
			"path":   NonEmpty("Absolute path of the directory in the Space."),
			"depth":  Integer("Levels to descend (1 = the directory's own entries).", 1, maxListDepth, 1),
			"hidden": Boolean("Include dot files.", false),
		}),
		Requires: []api.Feature{api.FeatureFiles},
		Errors:   []api.Kind{api.KindNotFound, api.KindIO},
		Result:   "one line per entry; structured {path, entries: [{name, path, type, size, mode, modified}], truncated}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				Path   string
				Depth  int
				Hidden bool
			}
			if err := Decode(c, "space_ls", &a); err != nil {
				return nil, err
			}
			if a.Depth == 0 {
				a.Depth = 1
			}
			res, err := c.Space.Client.List(ctx, a.Path, a.Depth, a.Hidden)
			if err != nil {
				return nil, err
			}
			if res.Entries == nil {
				res.Entries = []api.FileInfo{}
			}
			var b strings.Builder
			for _, e := range res.Entries {
				name := e.Path
				if name == "" {
					name = e.Name
				}
				if e.Type == api.TypeDir {
					name += "/"
				}
				fmt.Fprintf(&b, "%-7s %12d %s %s %s\n", e.Type, e.Size, e.Mode, e.Modified.UTC().Format("2006-01-02T15:04:05Z"), name)
			}
			if res.Truncated {
				b.WriteString("[listing truncated at the daemon's entry limit]\n")
			}
			if len(res.Entries) == 0 {
				b.WriteString("(empty)")
			}
			return &mcpserve.Result{Text: strings.TrimRight(b.String(), "\n"), Structured: res}, nil
		},
	}
}
