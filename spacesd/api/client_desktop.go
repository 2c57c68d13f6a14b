package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// MaxScreenshotBytes bounds a screenshot answer the client reads.
const MaxScreenshotBytes = 256 << 20

// Windows lists the top-level windows; appName filters by a case-insensitive
// substring of the app name, instance or title ("" = all).
func (c *Client) Windows(ctx context.Context, appName string) ([]Window, error) {
	var q url.Values
	if appName != "" {
		q = url.Values{"app_name": {appName}}
	}
	var list []Window
	return list, c.JSON(ctx, http.MethodGet, PathWindows, q, nil, &list)
}

// ActivateWindow raises and focuses a window.
func (c *Client) ActivateWindow(ctx context.Context, id uint32) (*Window, error) {
	var w Window
	return &w, c.JSON(ctx, http.MethodPost, windowPath(PathWindowActivate, id), nil, struct{}{}, &w)
}

// CloseWindow asks a window to close (as its close button would).
func (c *Client) CloseWindow(ctx context.Context, id uint32) error {
	return c.JSON(ctx, http.MethodPost, windowPath(PathWindowClose, id), nil, struct{}{}, nil)
}

// SetWindowGeometry moves and/or resizes a window and answers its new state.
func (c *Client) SetWindowGeometry(ctx context.Context, id uint32, req GeometryRequest) (*Window, error) {
	var w Window
	return &w, c.JSON(ctx, http.MethodPost, windowPath(PathWindowGeometry, id), nil, req, &w)
}

// LaunchApp starts an application on the desktop.
func (c *Client) LaunchApp(ctx context.Context, req LaunchRequest) (*LaunchResult, error) {
	var res LaunchResult
	return &res, c.JSON(ctx, http.MethodPost, PathAppsLaunch, nil, req, &res)
}

// Screenshot captures the screen or one window and returns the encoded
// image with its description.
func (c *Client) Screenshot(ctx context.Context, req ScreenshotRequest) ([]byte, *ScreenshotInfo, error) {
	q := url.Values{}
	if req.WindowID != 0 {
		q.Set("window_id", strconv.FormatUint(uint64(req.WindowID), 10))
	}
	if req.Format != "" {
		q.Set("format", req.Format)
	}
	if req.Quality != 0 {
		q.Set("quality", strconv.Itoa(req.Quality))
	}
	if req.MaxDimension != 0 {
		q.Set("max_dimension", strconv.Itoa(req.MaxDimension))
	}
	resp, err := c.Do(ctx, http.MethodGet, PathScreenshot, q, nil, "")
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var info ScreenshotInfo
	if err := json.Unmarshal([]byte(resp.Header.Get(ScreenshotInfoHeader)), &info); err != nil {
		return nil, nil, Errorf(KindJSON, "screenshot answer: header %s: %w", ScreenshotInfoHeader, err)
	}
	img, err := io.ReadAll(io.LimitReader(resp.Body, MaxScreenshotBytes))
	if err != nil {
		return nil, nil, transportError(ctx, err)
	}
	return img, &info, nil
}

// MoveMouse moves the pointer (Move is the files call).
func (c *Client) MoveMouse(ctx context.Context, req MouseMoveRequest) (*InputResult, error) {
	return c.input(ctx, PathInputMove, req)
}

// Click clicks (Count times) at a point.
func (c *Client) Click(ctx context.Context, req ClickRequest) (*InputResult, error) {
	return c.input(ctx, PathInputClick, req)
}

// Drag presses a button at one point, moves to another and releases.
func (c *Client) Drag(ctx context.Context, req DragRequest) (*InputResult, error) {
	return c.input(ctx, PathInputDrag, req)
}

// Scroll turns the wheel.
func (c *Client) Scroll(ctx context.Context, req ScrollRequest) (*InputResult, error) {
	return c.input(ctx, PathInputScroll, req)
}

// Key presses one key or hotkey ("Return", "ctrl+shift+t").
func (c *Client) Key(ctx context.Context, key string) (*InputResult, error) {
	return c.input(ctx, PathInputKey, KeyRequest{Key: key})
}

// Type types Unicode text.
func (c *Client) Type(ctx context.Context, text string) (*InputResult, error) {
	return c.input(ctx, PathInputType, TypeRequest{Text: text})
}

func (c *Client) input(ctx context.Context, path string, req any) (*InputResult, error) {
	var res InputResult
	return &res, c.JSON(ctx, http.MethodPost, path, nil, req, &res)
}

// ClipboardGet reads the clipboard's text.
func (c *Client) ClipboardGet(ctx context.Context) (string, error) {
	var t ClipboardText
	return t.Text, c.JSON(ctx, http.MethodGet, PathClipboard, nil, nil, &t)
}

// ClipboardSet puts text on the clipboard.
func (c *Client) ClipboardSet(ctx context.Context, text string) error {
	return c.JSON(ctx, http.MethodPut, PathClipboard, nil, ClipboardText{Text: text}, nil)
}

func windowPath(pattern string, id uint32) string {
	return strings.Replace(pattern, "{id}", strconv.FormatUint(uint64(id), 10), 1)
}
