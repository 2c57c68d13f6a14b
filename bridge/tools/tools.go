// Package tools is the bridge's tool surface: the tools over one Space
// (mcp/spacetools, which cua-spacesd serves too), each taking a
// `space` argument resolved through the registry, and the bridge's own:
// the registry (add_space, list_spaces, remove_space), transfers with this
// machine (upload, download) and stream endpoints.
package tools

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/bridge/hostfs"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
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

// Deps are what tools need from the bridge.
type Deps struct {
	Registry *registry.Registry
	Log      *slog.Logger
	// Host is the part of this machine's file system that upload and
	// download may use; nil refuses every host path.
	Host *hostfs.FS

	capsMu sync.Mutex
	caps   map[string]capsEntry

	// sessions are the MCP sessions with the Spaces' daemons.
	sessions *daemonSessions
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
	d := &Deps{Registry: reg, Log: log, caps: map[string]capsEntry{}, sessions: newDaemonSessions(daemonSessionIdle)}
	for _, o := range opts {
		o(d)
	}
	return d
}

// Close ends the MCP sessions with the Spaces' daemons (each told with a
// DELETE) and waits for them; the bridge calls it when it stops.
func (d *Deps) Close() { d.sessions.Close() }

// Defs returns the definition of every tool the bridge serves, sorted by
// name: the tools over one Space and the bridge's own.
func Defs(d *Deps) []*spacetools.Tool {
	ts := append(spacetools.All(),
		addSpaceTool(d), removeSpaceTool(d), listSpacesTool(d),
		uploadTool(d), downloadTool(d),
		streamEndpointTool(), streamSpaceWindowTool(),
		relayRegisterSpaceTool(d), relayUnregisterSpaceTool(d),
		shareSpaceTool(d), unshareSpaceTool(d), spaceSharesTool(d),
	)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts
}

// All returns every tool as the bridge serves it, sorted by name.
func All(d *Deps) []*mcpserve.Tool { return d.Surface().ServeAll(Defs(d)) }

// SpaceArg is the argument that names a tool's Space.
func SpaceArg() *jsonschema.Schema {
	return spacetools.NonEmpty("The Space: a registered name (a unique prefix works), direct:<host:port> or relay:<computer>.")
}

// Surface is how the bridge serves the Space tools: each takes a `space`
// argument, resolved through the registry and gated on the tool's features.
func (d *Deps) Surface() spacetools.Surface {
	return spacetools.Surface{SpaceArg: SpaceArg(), Space: d.callSpace}
}

// callSpace resolves and gates the Space a call names.
func (d *Deps) callSpace(ctx context.Context, c *mcpserve.Call, need []api.Feature) (*spacetools.Space, error) {
	var a struct {
		Space string `json:"space"`
	}
	if err := json.Unmarshal(c.Args, &a); err != nil {
		return nil, api.Errorf(api.KindInvalidArgument, "arguments: %v", err)
	}
	c.LogAttrs = append(c.LogAttrs, slog.String("space", a.Space))
	return d.space(ctx, a.Space, need)
}

// space resolves id, and checks that its spacesd answers and supports every
// feature in need.
func (d *Deps) space(ctx context.Context, id string, need []api.Feature) (*spacetools.Space, error) {
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
	services := daemonServices{c: client, key: spaceKey(entry), sessions: d.sessions}
	return &spacetools.Space{ID: id, Client: client, Caps: caps, Services: services}, nil
}

// spaceKey names what a Space's caches are valid for: its URL, token and
// trust (a new token, new trust, or the name registered elsewhere, is
// another Space). The MCP session with the daemon is kept under it and
// holds the client it was opened with, so a Space re-added with another
// pin or CA file must not find the session the old trust opened.
func spaceKey(e registry.Entry) string {
	return e.URL + "\x00" + e.Token + "\x00" + e.Fingerprint + "\x00" + e.CAFile
}

// capabilities returns the Space's capabilities, cached for capsTTL.
func (d *Deps) capabilities(ctx context.Context, e registry.Entry, c *client.Client) (*api.Capabilities, error) {
	key := spaceKey(e)
	d.capsMu.Lock()
	ce, ok := d.caps[key]
	d.capsMu.Unlock()
	if ok && time.Since(ce.stamp) < capsTTL {
		return ce.caps, nil
	}
	caps, err := spacetools.FetchCapabilities(ctx, c)
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
