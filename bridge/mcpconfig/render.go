// Package mcpconfig writes the configuration that plugs cua-bridge into an
// MCP host (Claude Code, Claude Desktop, Cursor, VS Code, Codex, or any host
// reading the common mcpServers JSON), in each host's own documented format:
// a shell line, JSON or TOML. The config names the bridge by its absolute
// path and passes the registry directory explicitly (--home), so the host's
// own environment decides nothing.
//
// Render builds the text from a Server; Main is the mcp-config command.
package mcpconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/trycua/cua-spacesd/api"
)

// Client names an MCP host whose configuration format Render knows.
type Client string

// The hosts Render writes for. Each format follows the host's own
// documentation (linked from docs/tools.md, "Connecting an MCP host").
const (
	ClaudeCode    Client = "claude-code"    // the `claude mcp add` command line
	ClaudeDesktop Client = "claude-desktop" // claude_desktop_config.json
	Cursor        Client = "cursor"         // ~/.cursor/mcp.json
	VSCode        Client = "vscode"         // .vscode/mcp.json
	Codex         Client = "codex"          // ~/.codex/config.toml
	Generic       Client = "generic"        // the common mcpServers JSON
)

// Clients lists every client, the default (Generic) last.
func Clients() []Client {
	return []Client{ClaudeCode, ClaudeDesktop, Cursor, VSCode, Codex, Generic}
}

// ServerName is the key the bridge gets in a host's server list.
const ServerName = "cua-bridge"

// TokenEnv is the environment variable a host reads the bridge's bearer
// token from, for the hosts that can take a header value from one: the
// config then works without the secret written in it.
const TokenEnv = "CUA_BRIDGE_TOKEN"

// vscodeTokenInput is the id of the VS Code input that prompts for the
// token once and keeps it in VS Code's secret storage.
const vscodeTokenInput = "cua-bridge-token"

// Server is what a host config points at.
type Server struct {
	// Command is the bridge's absolute path and Home the registry directory
	// (absolute): the stdio form runs `Command mcp --home Home`.
	Command string
	Home    string
	// Roots are the host folders the upload and download tools may use
	// (`mcp --root`). The host starts the bridge from a directory of its
	// own choosing, so the config names them rather than leaving the
	// bridge's default (its working directory) to chance.
	Roots []string
	// URL, when set, asks for the streamable-HTTP form instead of stdio.
	URL string
	// Token is written into the config only when set (--show-token);
	// otherwise the config refers to it through the host's own indirection
	// (an environment variable or a prompted input), or a placeholder.
	Token string
	// TokenFile is where the token lives, for the note on how to supply it.
	TokenFile string
	// TokenFileExact says that TokenFile holds Token and nothing else bar
	// line ends after it, so that a shell's $(cat TokenFile) yields Token:
	// claude-code's line then reads the token there as it runs, and the
	// token stays out of the line and the shell's history.
	TokenFileExact bool
}

// Config is a rendered configuration: Text is exactly what the host reads
// (it parses in the host's format), Note tells a person where to put it and
// how to supply the token. Neither holds the token unless Server.Token is set.
type Config struct {
	Text string
	Note string
}

// Render writes the configuration of client for s.
func Render(client Client, s Server) (Config, error) {
	for _, f := range []struct {
		name, v string
		secret  bool
	}{{"bridge path", s.Command, false}, {"registry directory", s.Home, false}, {"URL", s.URL, false}, {"token", s.Token, true}, {"token file", s.TokenFile, false}} {
		what := fmt.Sprintf("the %s %q", f.name, f.v)
		if f.secret {
			// An error message is no place for the secret itself.
			what = "the " + f.name
		}
		// JSON and TOML text is UTF-8: a path that is not would be changed
		// on the way (JSON) or refused (TOML), and name another file.
		if !utf8.ValidString(f.v) {
			return Config{}, api.Errorf(api.KindInvalidArgument, "%s is not valid UTF-8, which a host's JSON or TOML config cannot hold", what).
				WithHint("use a path whose name is valid UTF-8")
		}
		// No path, URL or token holds a NUL, and no argv can carry one.
		if strings.ContainsRune(f.v, 0) {
			return Config{}, api.Errorf(api.KindInvalidArgument, "%s holds a NUL byte", what).WithHint("")
		}
	}
	if s.URL == "" && (s.Command == "" || s.Home == "") {
		return Config{}, api.Errorf(api.KindInvalidArgument, "the stdio form needs the bridge's path and the registry directory").WithHint("")
	}
	switch client {
	case ClaudeCode:
		return claudeCode(s), nil
	case ClaudeDesktop:
		if s.URL != "" {
			return Config{}, api.Errorf(api.KindInvalidArgument,
				"claude-desktop has no streamable-HTTP form: claude_desktop_config.json takes local (stdio) servers only, and its custom connectors connect from Anthropic's cloud, which cannot reach a bridge on this machine").
				WithHint("drop --http: the stdio form starts the bridge itself")
		}
		return jsonConfig(s, mcpServersDoc(s, "", ""),
			"Merge into claude_desktop_config.json (macOS: ~/Library/Application Support/Claude/, Windows: %APPDATA%\\Claude\\), then restart Claude Desktop.", "")
	case Cursor:
		return jsonConfig(s, mcpServersDoc(s, "", "${env:"+TokenEnv+"}"),
			"Merge into ~/.cursor/mcp.json (every project) or .cursor/mcp.json (one project).",
			"Cursor resolves ${env:"+TokenEnv+"} from its environment: start it with the token there, e.g. "+exportToken(s)+", then start Cursor from that shell.\n"+
				notInGUI("Cursor")+" Cursor has no prompt for the token, as VS Code has.")
	case VSCode:
		return jsonConfig(s, vscodeDoc(s),
			"Merge into .vscode/mcp.json (this workspace) or your user mcp.json (command: MCP: Open User Configuration).",
			"VS Code asks for the token once (input "+vscodeTokenInput+") and keeps it in its secret storage: paste the content of "+s.TokenFile+".")
	case Codex:
		return codex(s), nil
	case Generic:
		return jsonConfig(s, mcpServersDoc(s, "http", "${"+TokenEnv+"}"),
			"Merge into the mcpServers object of your MCP host's config.",
			"Hosts that expand ${VAR} in headers (as Claude Code does) take the token from "+TokenEnv+" in their environment, e.g. "+exportToken(s)+
				"; for others, replace ${"+TokenEnv+"} with the content of "+s.TokenFile+".\n"+
				notInGUI("A host")+" VS Code prompts for the token instead: --client vscode.")
	}
	return Config{}, api.Errorf(api.KindInvalidArgument, "unknown client %q (one of %s)", client, clientList()).WithHint("")
}

func clientList() string {
	names := make([]string, 0, len(Clients()))
	for _, c := range Clients() {
		names = append(names, string(c))
	}
	return strings.Join(names, ", ")
}

// stdioArgs are the bridge's arguments in the stdio form. --home rather than
// a CUA_HOME entry in the host's env: every host passes arguments the same
// way, and `claude mcp add -e` swallows the server name that follows it.
func stdioArgs(s Server) []string {
	args := []string{"mcp", "--home", s.Home}
	for _, r := range s.Roots {
		args = append(args, "--root", r)
	}
	return args
}

// bearer is the Authorization header value: the token itself only when the
// caller asked for it, otherwise ref (the host's indirection).
func bearer(s Server, ref string) string {
	if s.Token != "" {
		return "Bearer " + s.Token
	}
	return "Bearer " + ref
}

type stdioEntry struct {
	Type    string   `json:"type,omitempty"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

type httpEntry struct {
	Type    string            `json:"type,omitempty"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// mcpServersDoc is the {"mcpServers": {...}} shape of Claude Desktop,
// Cursor and the many hosts that copied it. typ is the HTTP form's "type":
// Claude Code's .mcp.json needs "http" to tell it from SSE, Cursor infers
// the transport from url. tokenRef is how the host names the token.
func mcpServersDoc(s Server, typ, tokenRef string) map[string]any {
	var entry any = stdioEntry{Command: s.Command, Args: stdioArgs(s)}
	if s.URL != "" {
		entry = httpEntry{Type: typ, URL: s.URL, Headers: map[string]string{"Authorization": bearer(s, tokenRef)}}
	}
	return map[string]any{"mcpServers": map[string]any{ServerName: entry}}
}

type vscodeInput struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Description string `json:"description"`
	Password    bool   `json:"password"`
}

// vscodeDoc is VS Code's mcp.json: servers under "servers", each with an
// explicit type, and secrets through "inputs" that VS Code prompts for.
func vscodeDoc(s Server) map[string]any {
	if s.URL == "" {
		return map[string]any{"servers": map[string]any{ServerName: stdioEntry{Type: "stdio", Command: s.Command, Args: stdioArgs(s)}}}
	}
	doc := map[string]any{"servers": map[string]any{ServerName: httpEntry{Type: "http", URL: s.URL,
		Headers: map[string]string{"Authorization": bearer(s, "${input:"+vscodeTokenInput+"}")}}}}
	if s.Token == "" {
		doc["inputs"] = []vscodeInput{{Type: "promptString", ID: vscodeTokenInput, Description: "cua-bridge token (the content of " + s.TokenFile + ")", Password: true}}
	}
	return doc
}

// jsonConfig encodes doc; where says where the text goes, tokenHow how the
// host gets the token in the HTTP form (used when the token is not written).
func jsonConfig(s Server, doc map[string]any, where, tokenHow string) (Config, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// Paths with & < > stay readable: the text goes into a file, not HTML.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return Config{}, fmt.Errorf("encode config: %w", err)
	}
	return Config{Text: b.String(), Note: note(s, where, tokenHow)}, nil
}

// notInGUI is said beside every HTTP form that reads the token from the
// host's environment: a host started from a dock or a desktop menu has the
// desktop session's environment, not that of the shell the user exported
// the token in, and then sends an empty Bearer.
func notInGUI(host string) string {
	return host + ", started from a dock or a desktop menu, does not see variables exported in a shell: quit it and start it from such a shell."
}

// note is the advice printed beside the config (on stderr, so that the
// config itself can be redirected into a file): where the text goes and, in
// the HTTP form, how the host gets the token.
func note(s Server, where, tokenHow string) string {
	lines := []string{where}
	switch {
	case s.URL == "":
	case s.Token != "":
		lines = append(lines, "This config holds the bridge's token: keep it as private as "+s.TokenFile+".")
	default:
		lines = append(lines, tokenHow, "Or write the token into the config: --show-token.")
	}
	return strings.Join(lines, "\n") + "\n"
}

// exportToken is the shell line that puts the token in the environment.
func exportToken(s Server) string {
	return "export " + TokenEnv + "=\"$(cat " + shellQuote(s.TokenFile) + ")\""
}

// claudeCode is the `claude mcp add` line, user scope (every project).
// The server name comes before -e/-H: those options take several values
// and would swallow it; `--` ends Claude's options before the command.
func claudeCode(s Server) Config {
	words := []string{"claude", "mcp", "add"}
	where := "Run this line in a shell (with --scope project instead, it writes ./.mcp.json for one project)."
	header := ""
	if s.URL == "" {
		words = append(words, "--transport", "stdio", "--scope", "user", ServerName, "--", s.Command)
		words = append(words, stdioArgs(s)...)
	} else {
		words = append(words, "--transport", "http", "--scope", "user", ServerName, s.URL, "--header")
		header = shellQuote("Authorization: " + bearer(s, "${"+TokenEnv+"}"))
		if s.Token != "" && s.TokenFileExact {
			// The shell reads the file as the line runs: a line holding the
			// token would stay in the shell's history, and in the terminal.
			header = `"Authorization: Bearer $(cat ` + shellQuote(s.TokenFile) + `)"`
		}
	}
	quoted := make([]string, len(words), len(words)+1)
	for i, w := range words {
		quoted[i] = shellQuote(w)
	}
	if header != "" {
		quoted = append(quoted, header)
	}
	// note's advice on the token does not fit a line that writes the config.
	n := note(s, where, "")
	switch {
	case s.URL == "":
	case s.Token == "":
		n = where + "\nClaude Code expands ${" + TokenEnv + "} when it loads the config: start claude with the token in its environment, e.g. " + exportToken(s) + " first.\n" +
			"Claude Code inside an IDE or app started from a dock or a desktop menu does not see variables exported in a shell: quit that and start it from such a shell.\n" +
			"Or have Claude Code keep the token in its config: --show-token (the line then reads it from " + s.TokenFile + " as it runs, so it stays out of your shell's history).\n"
	case s.TokenFileExact:
		n = where + "\nThe line reads the token from " + s.TokenFile + " as it runs, so the token stays out of the line and your shell's history; " +
			"Claude Code keeps it in its own config, ~/.claude.json (./.mcp.json with --scope project: keep that out of version control), as private as " + s.TokenFile + " should be.\n"
	default:
		n = where + "\nWarning: this line holds the token itself, and your shell keeps the lines it runs in its history. " +
			"Write the token alone on the first line of " + s.TokenFile + ", with no blanks around it, and run mcp-config again: the line then reads it from there.\n"
	}
	return Config{Text: strings.Join(quoted, " ") + "\n", Note: n}
}

// codex is the [mcp_servers.<name>] table of ~/.codex/config.toml. Codex
// takes a bearer token from a named environment variable
// (bearer_token_env_var); a literal one goes in http_headers.
func codex(s Server) Config {
	var b strings.Builder
	fmt.Fprintf(&b, "[mcp_servers.%s]\n", ServerName)
	if s.URL == "" {
		fmt.Fprintf(&b, "command = %s\n", tomlString(s.Command))
		args := stdioArgs(s)
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = tomlString(a)
		}
		fmt.Fprintf(&b, "args = [%s]\n", strings.Join(quoted, ", "))
	} else {
		fmt.Fprintf(&b, "url = %s\n", tomlString(s.URL))
		if s.Token != "" {
			fmt.Fprintf(&b, "http_headers = { Authorization = %s }\n", tomlString(bearer(s, "")))
		} else {
			fmt.Fprintf(&b, "bearer_token_env_var = %s\n", tomlString(TokenEnv))
		}
	}
	return Config{
		Text: b.String(),
		Note: note(s, "Add to ~/.codex/config.toml (or .codex/config.toml in a trusted project).",
			"Codex reads the bearer token from "+TokenEnv+" in its environment: start it with the token there, e.g. "+exportToken(s)+" first.\n"+
				notInGUI("The Codex app or IDE extension")+" Codex has no prompt for the token, as VS Code has."),
	}
}

// tomlString quotes s as a TOML basic string: the escapes TOML defines,
// and \uXXXX for any other control character (TOML forbids them raw).
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// shellSafe are the words a POSIX shell reads back unchanged without quotes:
// no expansion ($ ` ~ * ? [ {), no word splitting, no comment.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell: single quotes keep everything
// literal, including $, so ${CUA_BRIDGE_TOKEN} reaches the host unexpanded;
// a single quote itself is closed, escaped and reopened.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
