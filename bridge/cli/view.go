package cli

import (
	"context"
	"fmt"

	"github.com/trycua/cua-spacesd/api"
)

const viewUsage = "view SPACE"

// runView will open the Space's desktop viewer. The viewer page and its
// tickets come with desktop streaming; until this bridge can ask for them it
// says so plainly, naming the Space's own limitation when it has one.
func (env Env) runView(ctx context.Context, args []string) int {
	fs := env.newFlags("view", viewUsage)
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return ExitUsage
	}
	c, e, err := env.client(pos[0])
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	if err := caps.Require(api.FeatureDesktopStream); err != nil {
		return env.fail(ExitFailure, err)
	}
	return env.fail(ExitFailure, &api.Error{
		Kind:    api.KindCapabilityMissing,
		Feature: string(api.FeatureDesktopStream),
		Message: fmt.Sprintf("desktop streaming is not available yet in this cua-bridge (the Space %s supports it)", e.Name),
		Hint:    "take a still image with: cua-bridge screenshot " + e.Name + " -o screen.png",
	})
}
