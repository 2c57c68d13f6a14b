package client

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// Exec runs a command to completion.
func (c *Client) Exec(ctx context.Context, req api.ExecRequest) (*api.ExecResult, error) {
	var res api.ExecResult
	return &res, c.JSON(ctx, http.MethodPost, api.PathExec, nil, req, &res)
}

// Start starts a detached process.
func (c *Client) Start(ctx context.Context, req api.StartRequest) (*api.ProcessInfo, error) {
	var info api.ProcessInfo
	return &info, c.JSON(ctx, http.MethodPost, api.PathProcesses, nil, req, &info)
}

// Processes lists the processes the daemon started and still remembers.
func (c *Client) Processes(ctx context.Context) ([]api.ProcessInfo, error) {
	var list []api.ProcessInfo
	return list, c.JSON(ctx, http.MethodGet, api.PathProcesses, nil, nil, &list)
}

// Process describes one process.
func (c *Client) Process(ctx context.Context, id string) (*api.ProcessInfo, error) {
	var info api.ProcessInfo
	return &info, c.JSON(ctx, http.MethodGet, processPath(api.PathProcess, id), nil, nil, &info)
}

// Signal sends a signal to a process (its whole group unless group is false).
func (c *Client) Signal(ctx context.Context, id, signal string) error {
	return c.JSON(ctx, http.MethodPost, processPath(api.PathProcessSignal, id), nil, api.SignalRequest{Signal: signal}, nil)
}

// Resize changes a PTY process's terminal size.
func (c *Client) Resize(ctx context.Context, id string, size api.PTYSize) error {
	return c.JSON(ctx, http.MethodPost, processPath(api.PathProcessResize, id), nil, size, nil)
}

// WriteStdin writes bytes to a process started with Stdin; closeAfter closes
// its stdin afterwards. It answers how many bytes reached the process: all
// of them, unless the error says where the process stopped reading.
func (c *Client) WriteStdin(ctx context.Context, id string, data []byte, closeAfter bool) (*api.StdinResult, error) {
	q := api.StdinQuery{Close: closeAfter}
	resp, err := c.Do(ctx, http.MethodPost, processPath(api.PathProcessStdin, id), q.Values(), bytes.NewReader(data), "application/octet-stream")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var res api.StdinResult
	if err := decodeJSON(resp.Body, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// StreamProcess opens the output stream from the given offsets. Every byte
// from those offsets on arrives once, in order, then an "exit" event; Send
// takes api.StreamInput messages (stdin, resize, signal).
func (c *Client) StreamProcess(ctx context.Context, id string, stdoutOffset, stderrOffset int64) (*ProcessStream, error) {
	q := api.ProcessStreamQuery{StdoutOffset: stdoutOffset, StderrOffset: stderrOffset}
	return openStream[api.StreamEvent](ctx, c, processPath(api.PathProcessStream, id), q.Values())
}

func processPath(pattern, id string) string {
	return strings.Replace(pattern, "{id}", url.PathEscape(id), 1)
}
