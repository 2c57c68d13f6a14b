// Package mcp serves the bridge's tools over MCP: stdio (cua-bridge mcp)
// and streamable HTTP (cua-bridge serve). The server, its gate and its
// transports are mcp/mcpserve, which cua-spacesd serves its own tools
// with too; what is the bridge's own is here: its name, its tools, and who
// may reach it over HTTP.
package mcp

import (
	"log/slog"

	"github.com/trycua/cua-spacesd/bridge/tools"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
)

// ServerName is the name the bridge gives in initialize.
const ServerName = "cua-bridge"

// Config builds a Bridge.
type Config struct {
	Deps    *tools.Deps
	Logger  *slog.Logger
	Version string
	// Tools overrides the tool list (tests); default tools.All(Deps).
	Tools []*mcpserve.Tool
}

// Bridge is the MCP server over the bridge's tools.
type Bridge struct {
	*mcpserve.Server
	deps *tools.Deps
}

// New registers every tool with a new server.
func New(cfg Config) (*Bridge, error) {
	if cfg.Tools == nil {
		cfg.Tools = tools.All(cfg.Deps)
	}
	s, err := mcpserve.New(mcpserve.Config{
		Name: ServerName, Version: cfg.Version, Tools: cfg.Tools, Logger: cfg.Logger,
		Instructions: "Tools over Spaces (desktops running cua-spacesd). list_spaces shows them; add_space registers one. " +
			"A failed tool answers isError with structuredContent.error.kind.",
	})
	if err != nil {
		return nil, err
	}
	return &Bridge{Server: s, deps: cfg.Deps}, nil
}

// Close ends what the bridge holds open with the Spaces (their MCP
// sessions), once it serves no more calls.
func (b *Bridge) Close() {
	if b.deps != nil {
		b.deps.Close()
	}
}
