package mcp

// SessionCount exposes the number of open MCP sessions to the tests.
func SessionCount(b *Bridge) int { return b.sessionCount() }
