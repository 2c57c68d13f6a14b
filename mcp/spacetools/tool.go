// Package spacetools defines the tools over one Space, once, for every
// program that serves them: cua-bridge (each tool takes a `space` argument
// and reaches that Space through its registry) and cua-spacesd's built-in
// MCP service `spacesd` (the same tools without `space`, over the daemon
// itself). A tool is a thin adapter from its arguments to the daemon's Go
// client (api/client); a Surface says how a program finds the Space of a
// call. Titles, hints, schemas and output schemas are therefore the same on
// both surfaces, because they are the same values.
package spacetools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
)

// Tool is one tool over a Space, with what its documentation says of it.
type Tool struct {
	Name string
	// Title is the tool's name for people, shown by hosts that have room.
	Title       string
	Description string
	// Schema is the JSON schema of the arguments (type object), without the
	// argument a Surface may add to name the Space.
	Schema *jsonschema.Schema
	// NoSpace: the tool concerns no Space (the bridge's registry tools): no
	// Space is resolved for it and no argument added.
	NoSpace bool
	// Requires lists the spacesd features the tool needs; the Surface
	// answers capability_missing before Run when one is unsupported.
	Requires []api.Feature
	// Errors lists the error kinds the tool may answer with beyond the
	// common ones (docs/tools.md).
	Errors []api.Kind
	// Result says in one line what a successful call answers (docs/tools.md).
	Result string
	// Output is the JSON schema of a successful call's Structured result,
	// made from the very Go type the tool answers (OutputOf), so the two
	// cannot drift; nil when the tool answers no JSON.
	Output *jsonschema.Schema
	// Hints tell a host how careful to be with the tool.
	Hints mcpserve.Hints
	// Keyless: the tool changes the Space through no route that takes an
	// Idempotency-Key (an MCP call), so it takes no idempotency_key.
	Keyless bool
	Run     func(ctx context.Context, c *Call) (*mcpserve.Result, error)
}

// keyed reports whether t takes an idempotency_key: it changes the Space
// through the daemon's routes.
func (t *Tool) keyed() bool { return !t.NoSpace && !t.Hints.ReadOnly && !t.Keyless }

// Call is one invocation of a tool: the server's call, and its Space.
type Call struct {
	*mcpserve.Call
	// Space is the call's Space; nil for a NoSpace tool.
	Space *Space
}

// Space is a resolved, reachable Space.
type Space struct {
	// ID names the Space in messages ("s1", "this Space").
	ID     string
	Client *client.Client
	Caps   *api.Capabilities
	// Services are the Space's MCP services (list_tools, call_tool).
	Services Services
}

// All returns every tool over one Space, sorted by name.
func All() []*Tool {
	ts := []*Tool{
		spaceCapabilitiesTool(),
		spaceBashTool(), spaceReadTool(), spaceWriteTool(), spaceLsTool(),
		listSpaceWindowsTool(), focusSpaceWindowTool(), launchAppTool(), spaceScreenshotTool(),
		spaceClickTool(), spaceMoveMouseTool(), spaceDragTool(), spaceScrollTool(),
		spaceTypeTool(), spacePressKeyTool(),
		spaceWindowTool(), spaceClipboardGetTool(), spaceClipboardSetTool(),
		spaceProcessStartTool(), spaceProcessOutputTool(), spaceProcessInputTool(), spaceProcessSignalTool(), spaceProcessesTool(),
		spaceAccessibilityTreeTool(), spaceFindElementTool(), spaceElementActionTool(),
		listToolsTool(), callToolTool(),
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts
}

// A Surface is a program serving the tools: how a call finds its Space.
type Surface struct {
	// SpaceArg, when set, is the argument every Space tool takes first to
	// name its Space (the bridge's `space`); nil when the Space is the
	// server itself.
	SpaceArg *jsonschema.Schema
	// Space resolves the Space of a call and checks that it supports every
	// feature in need (capability_missing otherwise). It may add to the
	// call's LogAttrs.
	Space func(ctx context.Context, c *mcpserve.Call, need []api.Feature) (*Space, error)
}

// spaceArgName is the argument SpaceArg is served as.
const spaceArgName = "space"

// Schema is the input schema t is served with on s: t's own, with the
// Space argument first when s names the Space.
func (s Surface) Schema(t *Tool) *jsonschema.Schema {
	addSpace := !t.NoSpace && s.SpaceArg != nil
	if !addSpace && !t.keyed() {
		return t.Schema
	}
	props := make(map[string]*jsonschema.Schema, len(t.Schema.Properties)+2)
	for k, v := range t.Schema.Properties {
		props[k] = v
	}
	required := t.Schema.Required
	if addSpace {
		props[spaceArgName] = s.SpaceArg
		required = append([]string{spaceArgName}, required...)
	}
	if t.keyed() {
		props[idempotencyKeyArg] = idempotencyKeySchema()
	}
	return Object(required, props)
}

// idempotencyKeyArg is the optional argument of every tool that changes a
// Space: an agent that retries a call passes the key of its first try, and
// the Space answers what that try did instead of doing it again.
const idempotencyKeyArg = "idempotency_key"

func idempotencyKeySchema() *jsonschema.Schema {
	one, max := 1, client.MaxCallerIdempotencyKeyLength
	return &jsonschema.Schema{Type: "string", MinLength: &one, MaxLength: &max, Pattern: "^[!-~]+$",
		Description: "Optional. A key of your choosing for this call (a UUID does). If you call again with the same key " +
			"and arguments, after a lost answer, the Space answers what the first call did instead of doing it again (kept 10 minutes)."}
}

// withIdempotencyKey puts the call's idempotency_key, if any, into ctx,
// for every call to the Space the tool makes.
func withIdempotencyKey(ctx context.Context, args json.RawMessage) context.Context {
	var a struct {
		Key string `json:"idempotency_key"`
	}
	if json.Unmarshal(args, &a) != nil || a.Key == "" {
		return ctx
	}
	return client.WithIdempotencyKey(ctx, a.Key)
}

// Serve is t as the server serves it on s.
func (s Surface) Serve(t *Tool) *mcpserve.Tool {
	return &mcpserve.Tool{
		Name: t.Name, Title: t.Title, Description: t.Description,
		Schema: s.Schema(t), Output: t.Output, Hints: t.Hints,
		Run: func(ctx context.Context, mc *mcpserve.Call) (*mcpserve.Result, error) {
			c := &Call{Call: mc}
			if t.keyed() {
				ctx = withIdempotencyKey(ctx, mc.Args)
			}
			if !t.NoSpace {
				sp, err := s.Space(ctx, mc, t.Requires)
				if err != nil {
					return nil, err
				}
				c.Space = sp
			}
			res, err := t.Run(ctx, c)
			if err != nil && ctx.Err() != nil {
				// Whatever the Space said, the caller went away (notifications/cancelled).
				return nil, api.Errorf(api.KindCancelled, "%s cancelled: %v", t.Name, ctx.Err())
			}
			return res, err
		},
	}
}

// ServeAll is every tool of ts as served on s.
func (s Surface) ServeAll(ts []*Tool) []*mcpserve.Tool {
	out := make([]*mcpserve.Tool, len(ts))
	for i, t := range ts {
		out[i] = s.Serve(t)
	}
	return out
}

// OutputOf is the output schema of a tool answering a T.
func OutputOf[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("output schema of %T: %v", *new(T), err))
	}
	return s
}

// Decode unmarshals a call's arguments into v.
func Decode(c *Call, tool string, v any) error {
	if err := json.Unmarshal(c.Args, v); err != nil {
		return api.Errorf(api.KindInvalidArgument, "%s: arguments: %v", tool, err)
	}
	return nil
}

// FetchCapabilities asks a Space what it supports. When the answer is not a
// spacesd's, GET /health tells "no spacesd here" from a transient failure.
func FetchCapabilities(ctx context.Context, c *client.Client) (*api.Capabilities, error) {
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

func spaceCapabilitiesTool() *Tool {
	return &Tool{
		Name:   "space_capabilities",
		Title:  "A Space's capabilities",
		Hints:  mcpserve.Hints{ReadOnly: true},
		Output: OutputOf[api.Capabilities](),
		Description: "What a Space's cua-spacesd supports: version, OS, arch, display server, limits, and every feature " +
			"with supported and, when unsupported, the limitation a person can act on.",
		Schema: Object(nil, map[string]*jsonschema.Schema{}),
		Result: "the capabilities object of GET /v1/capabilities",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			// Fresh, not the Surface's cached copy: this is the call that answers.
			caps, err := FetchCapabilities(ctx, c.Space.Client)
			if err != nil {
				return nil, err
			}
			b, _ := json.MarshalIndent(caps, "", "  ")
			return &mcpserve.Result{Text: string(b), Structured: caps}, nil
		},
	}
}
