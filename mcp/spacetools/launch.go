package spacetools

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
)

// launchTimeoutMS bounds launch_app's wait for the app's first window: long
// enough for a cold browser, short enough that a windowless app does not
// hold the call.
const launchTimeoutMS = 30000

func launchAppTool() *Tool {
	return &Tool{
		Name:        "launch_app",
		Title:       "Launch an app",
		Hints:       mcpserve.Hints{OpenWorld: true},
		Output:      OutputOf[api.LaunchResult](),
		Description: "Start an application on a Space's desktop (argv or a shell command line), optionally waiting for its first window.",
		Schema: Object(nil, map[string]*jsonschema.Schema{
			"command":         Str("Shell command line to run (e.g. \"xterm -e top\")."),
			"argv":            {Type: "array", Items: &jsonschema.Schema{Type: "string"}, Description: "Program and arguments, instead of command."},
			"wait_for_window": Boolean("Wait until the app shows a window, and answer it.", true),
		}),
		Requires: []api.Feature{api.FeatureLaunchApp},
		Errors:   []api.Kind{api.KindTimeout},
		Result:   "{pid, window?}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				Command       string   `json:"command"`
				Argv          []string `json:"argv"`
				WaitForWindow *bool    `json:"wait_for_window"`
			}
			if err := Decode(c, "launch_app", &a); err != nil {
				return nil, err
			}
			if (a.Command == "") == (len(a.Argv) == 0) {
				return nil, api.Errorf(api.KindInvalidArgument, "launch_app: pass exactly one of command and argv")
			}
			wait := a.WaitForWindow == nil || *a.WaitForWindow
			res, err := c.Space.Client.LaunchApp(ctx, api.LaunchRequest{Argv: a.Argv, Shell: a.Command, WaitForWindow: wait, TimeoutMS: launchTimeoutMS})
			if err != nil {
				return nil, err
			}
			text := fmt.Sprintf("launched pid %d", res.PID)
			if res.Window != nil {
				text += fmt.Sprintf(", window %d %q", res.Window.WindowID, res.Window.Title)
			}
			return &mcpserve.Result{Text: text, Structured: res}, nil
		},
	}
}
