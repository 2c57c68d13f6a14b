package compatsvc

import (
	"context"
	"encoding/base64"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// The screen is read through capabilities/desktop. Screenshots over the
// bus are never scaled, so their pixels are screen pixels: the one
// coordinate rule makes to_screen_coordinates and
// to_screenshot_coordinates the identity.

// maxJPEGQuality is computer-server's cap on its quality parameter.
const maxJPEGQuality = 95

type screenshotParams struct {
	Format  string `json:"format"`
	Quality *int   `json:"quality"`
}

type screenshotResult struct {
	ImageData string `json:"image_data"`
	Format    string `json:"format"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
}

func screenshot(ctx context.Context, c *conn, p screenshotParams) (any, error) {
	req := api.ScreenshotRequest{Format: api.FormatPNG}
	switch strings.ToLower(p.Format) {
	case "", "png":
	case "jpeg", "jpg":
		req.Format = api.FormatJPEG
		req.Quality = maxJPEGQuality
		if p.Quality != nil {
			req.Quality = min(max(*p.Quality, 1), maxJPEGQuality)
		}
	default:
		return nil, api.Errorf(api.KindInvalidArgument, "format %.20q: want png or jpeg", p.Format)
	}
	img, info, err := c.svc.desk.Screenshot(ctx, req)
	if err != nil {
		return nil, err
	}
	return screenshotResult{ImageData: base64.StdEncoding.EncodeToString(img), Format: info.Format, Width: info.Width, Height: info.Height}, nil
}

type sizeOf struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

type screenSizeResult struct {
	Size sizeOf `json:"size"`
}

func getScreenSize(ctx context.Context, c *conn, _ none) (any, error) {
	s, err := c.svc.desk.ScreenSize(ctx)
	if err != nil {
		return nil, err
	}
	return screenSizeResult{Size: sizeOf{s.Width, s.Height}}, nil
}

type position struct {
	X int `json:"x"`
	Y int `json:"y"`
}

type cursorResult struct {
	Position position `json:"position"`
}

func getCursorPosition(ctx context.Context, c *conn, _ none) (any, error) {
	p, err := c.svc.desk.CursorPosition(ctx)
	if err != nil {
		return nil, err
	}
	return cursorResult{Position: position{p.X, p.Y}}, nil
}

type coordinatesParams struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

type coordinatesResult struct {
	Coordinates [2]float64 `json:"coordinates"`
}

// sameCoordinates answers both conversions: a screenshot of the bus is the
// screen at scale 1.
func sameCoordinates(_ context.Context, _ *conn, p coordinatesParams) (any, error) {
	return coordinatesResult{Coordinates: [2]float64{p.X, p.Y}}, nil
}
