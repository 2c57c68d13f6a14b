package api

// PathMCP is where cua-spacesd serves MCP (streamable HTTP): its built-in
// service, spacesd, and through its list_tools and call_tool tools the MCP
// services the Space declares. Feature FeatureMCP.
const PathMCP = "/mcp"
