// Package layering holds the project's rules of dependency, in code, so
// that the picture in docs/architecture.md cannot drift: programs
// (spacesd/, bridge/, relay/) stand on the MCP layer (mcp/), the guest's
// capabilities and the media code, which stand on the wire contract (api/)
// and small helpers (internal/). Dependencies point down, never between
// programs. Its test checks every package of the module against Rules
// (the model is Tailscale's tstest/deptest).
package layering

import (
	"fmt"
	"slices"
	"strings"
)

// Module is the module's path; rules name packages relative to it.
const Module = "github.com/trycua/cua-spacesd"

// RelayProtocol is the relay's wire protocol (frames, stream header,
// grants): the daemon, the bridge and the relay all speak it, so every
// program may import it, as derp's protocol package (DESIGN §1).
const RelayProtocol = "relay/protocol"

// RelayTunnel is the session layer under the protocol (a WebSocket as a
// byte stream, the yamux tuning), and RelayAPI the relay's own HTTP API
// (its types and client): the daemon dials the one, the bridge calls the
// other, as the relay serves both.
const (
	RelayTunnel = "relay/tunnel"
	RelayAPI    = "relay/relayapi"
)

// RelayTURN is the relay program's TURN server, beside its store
// (relay/store): the relay's own, no other program's to import.
const RelayTURN = "relay/turnsvc"

// RelayMesh is the data path between a relay's nodes (trunks, directory,
// notices) over the cluster's NATS: the relay's own.
const RelayMesh = "relay/mesh"

// relayShared are the relay's packages every program may import.
var relayShared = []string{RelayProtocol, RelayTunnel, RelayAPI}

// A Rule constrains the packages that match From: each import must match
// one pattern of Allow (when Allow is set) and none of Deny, unless it
// matches Except.
//
// Patterns are module-relative ("api", "capabilities/..."); "std" is the
// standard library; any other import path with a dot in its first element
// is written in full ("github.com/gorilla/websocket").
type Rule struct {
	From   string
	Allow  []string
	Deny   []string
	Except []string
	Why    string
}

// programs are the three binaries' trees.
var programs = []string{"spacesd/...", "bridge/...", "relay/..."}

// Rules are the house's rules. docs/architecture.md quotes them.
var Rules = []Rule{
	{From: "api", Allow: []string{"std"},
		Why: "api is the wire contract every part stands on: the standard library only"},
	{From: "api/client", Allow: []string{"std", "api", "github.com/gorilla/websocket"},
		Why: "the Go client of the daemon: the contract and a WebSocket library"},
	{From: "capabilities/...", Deny: append([]string{"mcp/...", "api/client"}, programs...),
		Why: "a capability is usable without HTTP, MCP or any program"},
	{From: "media/...", Deny: append([]string{"mcp/...", "api/client"}, programs...),
		Why: "the media code is usable without HTTP, MCP or any program"},
	{From: "mcp/...", Deny: programs, Except: relayShared,
		Why: "the MCP layer both programs stand on may call the daemon (api/client), never a program's packages"},
	{From: "internal/...", Deny: append([]string{"mcp/...", "api/client", "capabilities/...", "media/..."}, programs...),
		Why: "internal/ holds small helpers below everything else"},
	{From: "spacesd/server", Deny: []string{"capabilities/...", "media/...", "mcp/..."},
		Why: "the daemon's server knows no capability: each plugs in as a service"},
	{From: "spacesd/httpapi", Deny: []string{"capabilities/...", "media/...", "mcp/..."},
		Why: "what every route shares (the envelope, each error's HTTP status) knows no capability: a status of its own comes from a cause in api"},
	{From: "spacesd/...", Deny: []string{"bridge/...", "relay/..."}, Except: relayShared,
		Why: "no program imports another program's packages"},
	{From: "bridge/...", Deny: []string{"spacesd/...", "relay/..."}, Except: relayShared,
		Why: "no program imports another program's packages"},
	{From: "relay/...", Deny: []string{"spacesd/...", "bridge/..."},
		Why: "no program imports another program's packages"},
	{From: RelayProtocol, Deny: append([]string{"mcp/...", "capabilities/...", "media/...", "spacesd/...", "bridge/..."}, "relay/..."), Except: []string{RelayProtocol + "/..."},
		Why: "the relay's wire protocol is small and stands on api alone, so every program may import it"},
	{From: RelayTunnel, Allow: []string{"std", "github.com/gorilla/websocket", "github.com/hashicorp/yamux"},
		Why: "the session layer stands on the standard library, the WebSocket library and the multiplexer only"},
	{From: RelayAPI, Allow: []string{"std", "api", RelayProtocol},
		Why: "the relay's HTTP API (types and client) stands on the contract and the protocol only"},
	{From: RelayTURN, Allow: []string{"std", RelayProtocol, "github.com/pion/..."},
		Why: "the relay's TURN server stands on the protocol (its credentials) and pion only: relayd runs it, and it knows neither the store nor the HTTP side"},
	{From: RelayMesh, Allow: []string{"std", "api", RelayProtocol, RelayTunnel, "github.com/hashicorp/yamux", "github.com/nats-io/nats.go"},
		Why: "the path between nodes stands on NATS, yamux and the protocol only: relayd decides what it carries, and it knows neither sessions nor the store"},
}

// Package is one package of the module and what it imports.
type Package struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

// Violation is one import that breaks a rule.
type Violation struct {
	Package, Import string
	Rule            Rule
}

func (v Violation) String() string {
	return fmt.Sprintf("%s imports %s: %s", v.Package, v.Import, v.Rule.Why)
}

// Check answers every import of pkgs that breaks one of rules. stdlib
// tells a standard-library import path.
func Check(pkgs []Package, rules []Rule, stdlib func(string) bool) []Violation {
	var out []Violation
	for _, p := range pkgs {
		from, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		for _, r := range rules {
			if !match(r.From, from) {
				continue
			}
			for _, imp := range p.Imports {
				if !allowed(r, imp, stdlib) {
					out = append(out, Violation{Package: from, Import: display(imp), Rule: r})
				}
			}
		}
	}
	return out
}

func allowed(r Rule, imp string, stdlib func(string) bool) bool {
	matches := func(patterns []string) bool {
		return slices.ContainsFunc(patterns, func(pat string) bool {
			if pat == "std" {
				return stdlib(imp)
			}
			if rel, ok := relative(imp); ok {
				return match(pat, rel)
			}
			return match(pat, imp)
		})
	}
	if matches(r.Except) {
		return true
	}
	if r.Allow != nil && !matches(r.Allow) {
		return false
	}
	return !matches(r.Deny)
}

// relative answers a module package's path relative to the module.
func relative(importPath string) (string, bool) {
	if importPath == Module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(importPath, Module+"/")
	return rel, ok
}

func display(imp string) string {
	if rel, ok := relative(imp); ok {
		return rel
	}
	return imp
}

// match reports whether path matches pattern: the path itself, or with a
// trailing "/...", the path or anything below it.
func match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}
