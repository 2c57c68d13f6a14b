package spacetools

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
)

func spaceScreenshotTool() *Tool {
	return &Tool{
		Name:   "space_screenshot",
		Title:  "Take a screenshot",
		Hints:  mcpserve.Hints{ReadOnly: true},
		Output: OutputOf[api.ScreenshotInfo](),
		Description: "Capture a Space's screen (or one window) as an image. Coordinates in the image, passed with its scale " +
			"(and window_id) to the pointer tools, land where the image shows them.",
		Schema: Object(nil, map[string]*jsonschema.Schema{
			"window_id": Integer("Capture only this window.", 0, 0, nil),
			"format":    Enum("Image format: png is exact; jpeg is smaller and about twice as fast to take, for an agent's loop.", "png", "png", "jpeg"),
			"max_dimension": Integer("Scale down so the longer edge is at most this many pixels "+
				"(at most the Space's limits.max_screenshot_dimension, see space_capabilities).", 0, 0, nil),
		}),
		Requires: []api.Feature{api.FeatureScreenshot},
		Errors:   []api.Kind{api.KindNotFound, api.KindLimitExceeded},
		Result:   "an image content part, and {width, height, scale, format, bounds, window_id?}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				WindowID     uint32 `json:"window_id"`
				Format       string `json:"format"`
				MaxDimension int    `json:"max_dimension"`
			}
			if err := Decode(c, "space_screenshot", &a); err != nil {
				return nil, err
			}
			img, info, err := c.Space.Client.Screenshot(ctx, api.ScreenshotRequest{WindowID: a.WindowID, Format: a.Format, MaxDimension: a.MaxDimension})
			if err != nil {
				return nil, err
			}
			mime := "image/png"
			if info.Format == api.FormatJPEG {
				mime = "image/jpeg"
			}
			return &mcpserve.Result{
				Image:      &mcpserve.Image{Data: img, MIMEType: mime},
				Text:       fmt.Sprintf("screenshot %dx%d, scale %g (pass scale=%g with these coordinates)", info.Width, info.Height, info.Scale, info.Scale),
				Structured: info,
			}, nil
		},
	}
}
