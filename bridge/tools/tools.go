// Package tools is the bridge's tool surface, independent of MCP: each tool
// has a name, a description, an input schema, the spacesd features it needs,
// and a Run function that adapts its arguments to spacesd/api. The mcp
// package registers them with the SDK; the CLI may call them directly.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/bridge/hostfs"
	"github.com/trycua/cua-spacesd/bridge/registry"
)

// Limits of the tool layer.
const (
	// capsTTL is how long a Space's capabilities are trusted before the gate
	// asks again: short enough that a fixed Space is seen quickly, long
	// enough that a burst of calls costs one capabilities round trip.
	capsTTL = 5 * time.Second
	// probeTimeout bounds the health/capabilities probe of list_spaces and
	// add_space, so one dead Space does not stall the listing.
	probeTimeout = 3 * time.Second
)

// Tool is one bridge tool.
type Tool struct {
	Name string
	// Title is the tool's name for people, shown by hosts that have room.
	Title       string
	Description string
	// Schema is the JSON schema of the arguments (type object).
	Schema *jsonschema.Schema
	// TakesSpace: the tool's first argument is "space"; the Space is resolved
	// and gated on Requires before Run.
	TakesSpace bool
	// Requires lists the spacesd features the tool needs.
	Requires []api.Feature
	// Errors lists the error kinds the tool may answer with beyond the
	// common ones (invalid_argument; for Space tools not_found,
	// ambiguous_sandbox, spacesd_not_available, capability_missing,
	// unauthenticated, env, cancelled).
	Errors []api.Kind
	// Result says in one line what a successful call answers (docs/tools.md).
	Result string
	// Output is the JSON schema of a successful call's Structured result,
	// made from the very Go type the tool answers (outputOf), so the two
	// cannot drift; nil when the tool answers no JSON.
	Output *jsonschema.Schema
	// Hints tell a host how careful to be with the tool.
	Hints Hints
	Run   func(ctx context.Context, c *Call) (*Result, error)
}

// Hints are a tool's MCP annotations: what a host may assume before it asks
// a person to allow a call. They describe; they enforce nothing.
type Hints struct {
	// ReadOnly: the tool changes nothing, in the Space or on this machine.
	ReadOnly bool
	// Destructive: it may delete or overwrite what exists (a command, a
	// write, a click on a "Delete" button). Meaningless when ReadOnly.
	Destructive bool
	// Idempotent: calling it again with the same arguments changes nothing
	// more than the first call did.
	Idempotent bool
	// OpenWorld: it reaches beyond the Spaces and the registry (a command
	// that may use the network, an app, a URL of the caller's choosing).
	OpenWorld bool
}

// outputOf is the output schema of a tool answering a T.
func outputOf[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("output schema of %T: %v", *new(T), err))
	}
	return s
}

// Call is one invocation of a tool.
type Call struct {
	// Args are the raw JSON arguments (already validated against Schema).
	Args json.RawMessage
	// Space is set for tools with TakesSpace.
	Space *Space
	// Progress reports progress when the caller asked for it; never nil.
	Progress func(done, total float64, message string)
	deps     *Deps
}

// Space is a resolved, reachable Space.
type Space struct {
	ID     string
	Entry  registry.Entry
	Client *client.Client
	Caps   *api.Capabilities
}

// Result is what a successful tool call answers.
type Result struct {
	// Text is the human/LLM-readable answer.
	Text string
	// Structured becomes structuredContent (a JSON object).
	Structured any
	// Image, when set, is sent as an image content part before Text.
	Image *Image
}

// Image is binary image content.
type Image struct {
	Data     []byte
	MIMEType string
}

// Deps are what tools need from the bridge.
type Deps struct {
	Registry *registry.Registry
	Log      *slog.Logger
	// Host is the part of this machine's file system that upload and
	// download may use; nil refuses every host path.
	Host *hostfs.FS

	capsMu sync.Mutex
	caps   map[string]capsEntry
}

type capsEntry struct {
	caps  *api.Capabilities
	stamp time.Time
}

// DepsOption adjusts NewDeps.
type DepsOption func(*Deps)

// WithHost gives the tools the host folders they may read and write (a
// confined hostfs.FS for an agent).
func WithHost(h *hostfs.FS) DepsOption { return func(d *Deps) { d.Host = h } }

// NewDeps returns tool dependencies over a registry.
func NewDeps(reg *registry.Registry, log *slog.Logger, opts ...DepsOption) *Deps {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Deps{Registry: reg, Log: log, caps: map[string]capsEntry{}}
	for _, o := range opts {
		o(d)
	}
	return d
}

// All returns every tool, sorted by name.
func All() []*Tool {
	ts := []*Tool{
		addSpaceTool(), removeSpaceTool(), listSpacesTool(), spaceCapabilitiesTool(),
		spaceBashTool(), spaceReadTool(), spaceWriteTool(), spaceLsTool(),
		uploadTool(), downloadTool(),
		listSpaceWindowsTool(), focusSpaceWindowTool(), launchAppTool(), spaceScreenshotTool(),
		spaceClickTool(), spaceMoveMouseTool(), spaceDragTool(), spaceScrollTool(),
		spaceTypeTool(), spacePressKeyTool(),
		spaceWindowTool(), spaceClipboardGetTool(), spaceClipboardSetTool(),
		spaceProcessStartTool(), spaceProcessOutputTool(), spaceProcessInputTool(), spaceProcessSignalTool(), spaceProcessesTool(),
		streamEndpointTool(), streamSpaceWindowTool(),
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts
}

// Invoke resolves and gates the Space (for Space tools) and runs the tool.
// args must already match the tool's schema.
func (d *Deps) Invoke(ctx context.Context, t *Tool, args json.RawMessage, progress func(done, total float64, msg string)) (*Result, string, error) {
	if progress == nil {
		progress = func(float64, float64, string) {}
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	c := &Call{Args: args, Progress: progress, deps: d}
	spaceID := ""
	if t.TakesSpace {
		var a struct {
			Space string `json:"space"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, "", api.Errorf(api.KindInvalidArgument, "%s: arguments: %v", t.Name, err)
		}
		spaceID = a.Space
		sp, err := d.space(ctx, a.Space, t.Requires)
		if err != nil {
			return nil, spaceID, err
		}
		c.Space = sp
	}
	res, err := t.Run(ctx, c)
	if err != nil && ctx.Err() != nil {
		// Whatever the Space said, the caller went away (notifications/cancelled).
		return nil, spaceID, api.Errorf(api.KindCancelled, "%s cancelled: %v", t.Name, ctx.Err())
	}
	return res, spaceID, err
}

// space resolves id, and checks that its spacesd answers and supports every
// feature in need.
func (d *Deps) space(ctx context.Context, id string, need []api.Feature) (*Space, error) {
	client, entry, err := d.Registry.Client(id)
	if err != nil {
		return nil, err
	}
	caps, err := d.capabilities(ctx, entry, client)
	if err != nil {
		return nil, err
	}
	if err := caps.Require(need...); err != nil {
		return nil, err
	}
	return &Space{ID: id, Entry: entry, Client: client, Caps: caps}, nil
}

// capabilities returns the Space's capabilities, cached for capsTTL.
func (d *Deps) capabilities(ctx context.Context, e registry.Entry, c *client.Client) (*api.Capabilities, error) {
	key := e.URL + "\x00" + e.Token
	d.capsMu.Lock()
	ce, ok := d.caps[key]
	d.capsMu.Unlock()
	if ok && time.Since(ce.stamp) < capsTTL {
		return ce.caps, nil
	}
	caps, err := fetchCapabilities(ctx, c)
	if err != nil {
		return nil, err
	}
	d.capsMu.Lock()
	d.caps[key] = capsEntry{caps: caps, stamp: time.Now()}
	d.capsMu.Unlock()
	return caps, nil
}

// forget drops a Space's cached capabilities (after remove or re-add).
func (d *Deps) forget() {
	d.capsMu.Lock()
	d.caps = map[string]capsEntry{}
	d.capsMu.Unlock()
}

// fetchCapabilities asks a Space what it supports. When the answer is not a
// spacesd's, GET /health tells "no spacesd here" from a transient failure.
func fetchCapabilities(ctx context.Context, c *client.Client) (*api.Capabilities, error) {
	caps, err := c.Capabilities(ctx)
	if err == nil {
		if caps.Daemon != "" && caps.Daemon != api.DaemonName {
			return nil, api.Errorf(api.KindSpacesdNotAvailable, "%s answered as %q, not %s", c.BaseURL(), caps.Daemon, api.DaemonName)
		}
		if caps.Features == nil {
			if _, herr := c.Health(ctx); herr != nil {
				return nil, herr
			}
		}
		return caps, nil
	}
	switch api.KindOf(err) {
	case api.KindUnauthenticated, api.KindCancelled, api.KindTimeout, api.KindSpacesdNotAvailable:
		return nil, err
	case api.KindJSON, api.KindNotFound:
		// Something answered, but not as a spacesd does.
		if _, herr := c.Health(ctx); herr != nil {
			return nil, herr
		}
	}
	return nil, err
}

// decode unmarshals a call's arguments into v.
func decode(c *Call, tool string, v any) error {
	if err := json.Unmarshal(c.Args, v); err != nil {
		return api.Errorf(api.KindInvalidArgument, "%s: arguments: %v", tool, err)
	}
	return nil
}
