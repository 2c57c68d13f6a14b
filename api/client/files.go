package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/trycua/cua-spacesd/api"
)

// Stat describes one path.
func (c *Client) Stat(ctx context.Context, path string) (*api.FileInfo, error) {
	var fi api.FileInfo
	return &fi, c.JSON(ctx, http.MethodGet, api.PathFileStat, api.FileStatQuery{Path: path}.Values(), nil, &fi)
}

// List lists a directory to depth levels (1 = its own entries).
func (c *Client) List(ctx context.Context, path string, depth int, hidden bool) (*api.ListResult, error) {
	q := api.FileListQuery{Path: path, Depth: depth, Hidden: hidden}
	var res api.ListResult
	return &res, c.JSON(ctx, http.MethodGet, api.PathFileList, q.Values(), nil, &res)
}

// Mkdir makes a directory.
func (c *Client) Mkdir(ctx context.Context, req api.MkdirRequest) error {
	return c.JSON(ctx, http.MethodPost, api.PathFileMkdir, nil, req, nil)
}

// Move renames a file or directory.
func (c *Client) Move(ctx context.Context, req api.MoveRequest) error {
	return c.JSON(ctx, http.MethodPost, api.PathFileMove, nil, req, nil)
}

// Remove deletes a file or directory.
func (c *Client) Remove(ctx context.Context, req api.RemoveRequest) error {
	return c.JSON(ctx, http.MethodPost, api.PathFileRemove, nil, req, nil)
}

// Read opens length bytes of a file from offset (length < 0: to the end).
// It returns the body and the whole file's size.
func (c *Client) Read(ctx context.Context, path string, offset, length int64) (io.ReadCloser, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(api.PathFileContent, api.FileReadQuery{Path: path}.Values()), nil)
	if err != nil {
		return nil, 0, api.Errorf(api.KindInvalidArgument, "read %s: %w", path, err)
	}
	if offset > 0 || length >= 0 {
		if length >= 0 {
			if length == 0 {
				// A zero-length Range is not expressible; an empty answer is the truth.
				req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", offset, offset))
			} else {
				req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
			}
		} else {
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
		}
	}
	resp, err := c.DoRequest(req, "")
	if err != nil {
		return nil, 0, err
	}
	size, _ := strconv.ParseInt(resp.Header.Get(api.HeaderFileSize), 10, 64)
	if length == 0 {
		resp.Body.Close()
		return io.NopCloser(&emptyReader{}), size, nil
	}
	return resp.Body, size, nil
}

type emptyReader struct{}

func (*emptyReader) Read([]byte) (int, error) { return 0, io.EOF }

// Write replaces a file atomically with the body: the old file or the new
// one, never a mix. mode is octal ("0644"), "" for the default or the old file's.
func (c *Client) Write(ctx context.Context, path string, body io.Reader, size int64, mode string) (*api.WriteResult, error) {
	q := api.FileWriteQuery{Path: path, Mode: mode}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.url(api.PathFileContent, q.Values()), body)
	if err != nil {
		return nil, api.Errorf(api.KindInvalidArgument, "write %s: %w", path, err)
	}
	if size >= 0 {
		req.ContentLength = size
	}
	resp, err := c.DoRequest(req, "application/octet-stream")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var res api.WriteResult
	if err := decodeJSON(resp.Body, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// BeginUpload announces a resumable upload. When an unfinished upload of the
// same path, size and sha256 exists, its state is returned so the client
// resumes from its offset.
func (c *Client) BeginUpload(ctx context.Context, req api.UploadRequest) (*api.UploadState, error) {
	var st api.UploadState
	return &st, c.JSON(ctx, http.MethodPost, api.PathUploads, nil, req, &st)
}

// UploadStatus returns how much of an upload has landed.
func (c *Client) UploadStatus(ctx context.Context, id string) (*api.UploadState, error) {
	var st api.UploadState
	return &st, c.JSON(ctx, http.MethodGet, processPath(api.PathUpload, id), nil, nil, &st)
}

// PutChunk appends body at offset, which must equal the upload's current offset.
func (c *Client) PutChunk(ctx context.Context, id string, offset int64, body io.Reader, n int64) (*api.UploadState, error) {
	q := api.UploadChunkQuery{Offset: offset}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.url(processPath(api.PathUpload, id), q.Values()), body)
	if err != nil {
		return nil, api.Errorf(api.KindInvalidArgument, "upload chunk: %w", err)
	}
	req.ContentLength = n
	resp, err := c.DoRequest(req, "application/octet-stream")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st api.UploadState
	return &st, decodeJSON(resp.Body, &st)
}

// CommitUpload verifies the sha256 and moves the upload into place.
func (c *Client) CommitUpload(ctx context.Context, id string) (*api.WriteResult, error) {
	var res api.WriteResult
	return &res, c.JSON(ctx, http.MethodPost, processPath(api.PathUploadDone, id), nil, nil, &res)
}

// AbortUpload drops an upload and its partial data.
func (c *Client) AbortUpload(ctx context.Context, id string) error {
	return c.JSON(ctx, http.MethodDelete, processPath(api.PathUpload, id), nil, nil, nil)
}

// Watch watches a directory (recursive: and everything below it).
func (c *Client) Watch(ctx context.Context, path string, recursive bool) (*FileWatch, error) {
	q := api.FileWatchQuery{Path: path, Recursive: recursive}
	return openStream[api.WatchEvent](ctx, c, api.PathFileWatch, q.Values())
}
