package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// MaxScreenshotBytes bounds a screenshot answer the client reads.
const MaxScreenshotBytes = 256 << 20

// Windows lists the top-level windows; appName filters by a case-insensitive
// substring of the app name, instance or title ("" = all).
func (c *Client) Windows(ctx context.Context, appName string) ([]api.Window, error) {
	var list []api.Window
	return list, c.JSON(ctx, http.MethodGet, api.PathWindows, api.WindowsQuery{AppName: appName}.Values(), nil, &list)
}

// ActivateWindow raises and focuses a window.
func (c *Client) ActivateWindow(ctx context.Context, id uint32) (*api.Window, error) {
	var w api.Window
	return &w, c.JSON(ctx, http.MethodPost, windowPath(api.PathWindowActivate, id), nil, struct{}{}, &w)
}

// CloseWindow asks a window to close (as its close button would).
func (c *Client) CloseWindow(ctx context.Context, id uint32) error {
	return c.JSON(ctx, http.MethodPost, windowPath(api.PathWindowClose, id), nil, struct{}{}, nil)
}

// SetWindowGeometry moves and/or resizes a window and answers its new state.
func (c *Client) SetWindowGeometry(ctx context.Context, id uint32, req api.GeometryRequest) (*api.Window, error) {
	var w api.Window
	return &w, c.JSON(ctx, http.MethodPost, windowPath(api.PathWindowGeometry, id), nil, req, &w)
}

// SetWindowState minimizes, maximizes or restores ("normal") a window and
// answers it afterwards.
func (c *Client) SetWindowState(ctx context.Context, id uint32, state api.WindowState) (*api.Window, error) {
	var w api.Window
	return &w, c.JSON(ctx, http.MethodPost, windowPath(api.PathWindowState, id), nil, api.WindowStateRequest{State: state}, &w)
}

// LaunchApp starts an application on the desktop.
func (c *Client) LaunchApp(ctx context.Context, req api.LaunchRequest) (*api.LaunchResult, error) {
	var res api.LaunchResult
	return &res, c.JSON(ctx, http.MethodPost, api.PathAppsLaunch, nil, req, &res)
}

// Screenshot captures the screen or one window and returns the encoded
// image with its description.
func (c *Client) Screenshot(ctx context.Context, req api.ScreenshotRequest) ([]byte, *api.ScreenshotInfo, error) {
	resp, err := c.Do(ctx, http.MethodGet, api.PathScreenshot, req.Values(), nil, "")
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var info api.ScreenshotInfo
	if err := json.Unmarshal([]byte(resp.Header.Get(api.ScreenshotInfoHeader)), &info); err != nil {
		return nil, nil, api.Errorf(api.KindJSON, "screenshot answer: header %s: %w", api.ScreenshotInfoHeader, err)
	}
	img, err := readImage(resp, MaxScreenshotBytes)
	var ae *api.Error
	if errors.As(err, &ae) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, transportError(ctx, err)
	}
	return img, &info, nil
}

// readImage reads an image answer whole. With its Content-Length (which
// the daemon always sends) it lands in one buffer of exactly that size,
// instead of one grown and copied a dozen times; past limit it is an
// error, never a silently cut image.
func readImage(resp *http.Response, limit int64) ([]byte, error) {
	if resp.ContentLength > limit {
		return nil, api.Errorf(api.KindLimitExceeded, "screenshot answer of %d bytes is over the client's limit of %d", resp.ContentLength, limit)
	}
	if resp.ContentLength >= 0 {
		img := make([]byte, resp.ContentLength)
		if _, err := io.ReadFull(resp.Body, img); err != nil {
			return nil, err
		}
		return img, nil
	}
	img, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err == nil && int64(len(img)) > limit {
		return nil, api.Errorf(api.KindLimitExceeded, "screenshot answer is over the client's limit of %d bytes", limit)
	}
	return img, err
}

// MoveMouse moves the pointer (Move is the files call).
func (c *Client) MoveMouse(ctx context.Context, req api.MouseMoveRequest) (*api.InputResult, error) {
	return c.input(ctx, api.PathInputMove, req)
}

// Click clicks (Count times) at a point.
func (c *Client) Click(ctx context.Context, req api.ClickRequest) (*api.InputResult, error) {
	return c.input(ctx, api.PathInputClick, req)
}

// Drag presses a button at one point, moves to another and releases.
func (c *Client) Drag(ctx context.Context, req api.DragRequest) (*api.InputResult, error) {
	return c.input(ctx, api.PathInputDrag, req)
}

// Scroll turns the wheel.
func (c *Client) Scroll(ctx context.Context, req api.ScrollRequest) (*api.InputResult, error) {
	return c.input(ctx, api.PathInputScroll, req)
}

// Key presses one key or hotkey ("Return", "ctrl+shift+t").
func (c *Client) Key(ctx context.Context, key string) (*api.InputResult, error) {
	return c.input(ctx, api.PathInputKey, api.KeyRequest{Key: key})
}

// Type types Unicode text.
func (c *Client) Type(ctx context.Context, text string) (*api.InputResult, error) {
	return c.input(ctx, api.PathInputType, api.TypeRequest{Text: text})
}

func (c *Client) input(ctx context.Context, path string, req any) (*api.InputResult, error) {
	var res api.InputResult
	return &res, c.JSON(ctx, http.MethodPost, path, nil, req, &res)
}

// ClipboardGet reads the clipboard's text.
func (c *Client) ClipboardGet(ctx context.Context) (string, error) {
	var t api.ClipboardText
	return t.Text, c.JSON(ctx, http.MethodGet, api.PathClipboard, nil, nil, &t)
}

// ClipboardSet puts text on the clipboard.
func (c *Client) ClipboardSet(ctx context.Context, text string) error {
	return c.JSON(ctx, http.MethodPut, api.PathClipboard, nil, api.ClipboardText{Text: text}, nil)
}

func windowPath(pattern string, id uint32) string {
	return strings.Replace(pattern, "{id}", strconv.FormatUint(uint64(id), 10), 1)
}
