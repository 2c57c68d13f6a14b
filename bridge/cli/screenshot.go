package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/hostfs"
	"github.com/trycua/cua-spacesd/bridge/transfer"
)

const screenshotUsage = "screenshot SPACE -o FILE [--window ID] [--max-dimension N] [--force]"

func (env Env) runScreenshot(ctx context.Context, args []string) int {
	fs := env.newFlags("screenshot", screenshotUsage)
	out := fs.String("o", "", "file to write (.png, or .jpg/.jpeg for JPEG)")
	window := fs.Uint("window", 0, "capture one window by id (0 = the whole screen)")
	maxDim := fs.Int("max-dimension", 0, "scale down so that neither side exceeds N pixels (0 = no scaling)")
	force := fs.Bool("force", false, "replace FILE if it exists")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 || *out == "" {
		fs.Usage()
		return ExitUsage
	}
	if *window > 1<<32-1 || *maxDim < 0 {
		return env.usage("screenshot: --window must be a window id and --max-dimension non-negative")
	}
	format := "png"
	switch strings.ToLower(filepath.Ext(*out)) {
	case ".jpg", ".jpeg":
		format = "jpeg"
	}
	if _, err := os.Lstat(*out); err == nil && !*force {
		return env.fail(ExitFailure, existsError(*out))
	}
	c, _, err := env.client(pos[0])
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	if err := caps.Require(api.FeatureScreenshot); err != nil {
		return env.fail(ExitFailure, err)
	}
	img, info, err := c.Screenshot(ctx, api.ScreenshotRequest{WindowID: uint32(*window), Format: format, MaxDimension: *maxDim})
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	if err := writeNew(*out, img, *force); err != nil {
		return env.fail(ExitFailure, err)
	}
	fmt.Fprintf(env.Stdout, "%s: %dx%d %s, scale %g\n", *out, info.Width, info.Height, info.Format, info.Scale)
	return ExitOK
}

// writeNew writes a file atomically (temp file, fsync, then one step into
// place) and, without force, never over an existing one.
func writeNew(dest string, data []byte, force bool) error {
	policy := transfer.Refuse
	if force {
		policy = transfer.Replace
	}
	_, err := transfer.Save(hostfs.Unconfined(), dest, data, 0o644, policy)
	return cpError(err)
}
