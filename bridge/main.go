// Command cua-bridge aggregates many Spaces into one MCP tool surface
// (stdio: cua-bridge mcp; streamable HTTP: cua-bridge serve) and a human CLI
// (space, exec, ps, logs, shell, cp, view, screenshot, relay). This file holds flags and
// subcommand dispatch only.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/cli"
	"github.com/trycua/cua-spacesd/bridge/hostfs"
	"github.com/trycua/cua-spacesd/bridge/mcp"
	"github.com/trycua/cua-spacesd/bridge/mcpconfig"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/bridge/tools"
	"github.com/trycua/cua-spacesd/internal/loopback"
)

var version = "dev"

// tokenFileName is where serve keeps its generated token under $CUA_HOME.
const tokenFileName = "bridge.token"

// envRoots lists the host folders the MCP tools may use (separated as PATH
// is), when no --root flag is given.
const envRoots = "CUA_BRIDGE_ROOTS"

const usage = `usage: cua-bridge <command> [flags]

MCP server:
  mcp [--home DIR] [--root DIR]...  serve MCP over stdio
  serve [--home DIR] [--listen ADDR] [--token-file FILE] [--root DIR]...
                                    serve MCP over streamable HTTP at /mcp (default 127.0.0.1:3210)
                                    --root: a folder upload/download may use (repeatable; default
                                    $CUA_BRIDGE_ROOTS, else the working directory; never $CUA_HOME)
  mcp-config [--client NAME] [--home DIR] [--root DIR]...
  mcp-config [--client NAME] [--home DIR] --http [--listen ADDR] [--token-file FILE] [--show-token]
                                    print the config that connects an MCP host to this bridge
                                    (claude-code, claude-desktop, cursor, vscode, codex, generic);
                                    the stdio form passes --root: the folders given, else the
                                    directory mcp-config runs in. Every flag: cua-bridge mcp-config --help
Human CLI:
  space add|ls|rm ...               manage registered Spaces
  exec SPACE -- CMD...              run a command, exit code passed through
  ps SPACE                          list the Space's background processes
  logs [-f] SPACE ID                print a background process's output (-f: follow it)
  shell SPACE                       interactive terminal in a Space
  cp SRC DST                        copy files (SPACE:/path on either side)
  view SPACE                        print the Space's viewer URL
  screenshot SPACE FILE             save a screenshot
Relay (reach your Spaces from anywhere as relay:<computer>):
  relay login --url URL --token-file FILE [--fingerprint sha256:... | --ca FILE]
                                    check your relay API token (GET /v1/me) and keep the login
                                    under $CUA_HOME (the token in relay-token.json, mode 0600)
  relay logout                      forget the relay login
  relay status [--json]             who you are on the relay, and your computers on it
  relay register SPACE [--name NAME]
                                    publish a Space as your computer NAME (default its name): it
                                    dials out to the relay, and every command takes relay:NAME
  relay unregister SPACE            take a Space (or a relay:<computer>) off the relay
  share SPACE WHO [--role editor]   share a Space with a user of your team (or team:<id>) as a
                                    viewer (default) or editor; a Space not on the relay is
                                    attached first, and invitees open relay:<computer>
  unshare SPACE [WHO]               stop sharing with WHO, or with everyone (a Space attached
                                    only for sharing then leaves the relay)
  shares SPACE [--audit]            who a Space is shared with (--audit: the newest audit lines)
  version                           print the version
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "mcp":
		return runMCP(ctx, rest, stdin, stdout, stderr)
	case "serve":
		return runServe(ctx, rest, stderr)
	case "mcp-config":
		return mcpconfig.Main(rest, mcpconfig.Defaults{
			Listen: mcp.DefaultListen, Path: mcp.MCPPath, TokenFileName: tokenFileName,
		}, stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "cua-bridge", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	if slices.Contains(cli.Commands, cmd) {
		return cli.Main(ctx, cmd, rest, stdout, stderr)
	}
	fmt.Fprintf(stderr, "cua-bridge: unknown command %q\n\n%s", cmd, usage)
	return 2
}

// rootsFlag collects repeated --root flags.
type rootsFlag []string

func (r *rootsFlag) String() string     { return strings.Join(*r, string(os.PathListSeparator)) }
func (r *rootsFlag) Set(v string) error { *r = append(*r, v); return nil }

// hostRoots are the folders the MCP tools may use: the --root flags, else
// $CUA_BRIDGE_ROOTS, else the working directory.
func hostRoots(flags rootsFlag) ([]string, error) {
	if len(flags) > 0 {
		return flags, nil
	}
	if v := os.Getenv(envRoots); v != "" {
		var roots []string
		for _, r := range filepath.SplitList(v) {
			if r != "" {
				roots = append(roots, r)
			}
		}
		return roots, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("no working directory to serve as root (pass --root DIR): %w", err)
	}
	return []string{wd}, nil
}

// newBridge opens the registry (the MCP server's one, for the process's
// life: every tool call takes its Space's client from it) and builds the
// MCP server, its tools confined to roots and kept out of the registry and
// the token file. Logs go to stderr as JSON: stdout belongs to the stdio
// transport.
func newBridge(home string, roots rootsFlag, tokenFile string, stderr io.Writer) (*mcp.Bridge, *registry.Registry, *slog.Logger, error) {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	reg, err := registry.Open(home)
	if err != nil {
		return nil, nil, nil, err
	}
	dirs, err := hostRoots(roots)
	if err != nil {
		return nil, nil, nil, err
	}
	// The tokens file is named apart from its folder so that a hard link
	// to it elsewhere is refused by its identity too.
	deny := []hostfs.Deny{
		{Path: reg.Dir(), What: "$CUA_HOME"},
		{Path: filepath.Join(reg.Dir(), registry.TokensFile), What: "the registry's tokens"},
		{Path: filepath.Join(reg.Dir(), registry.RelayTokenFile), What: "the relay login's token"},
	}
	if tokenFile != "" {
		deny = append(deny, hostfs.Deny{Path: tokenFile, What: "the bridge's token file"})
	}
	host, err := hostfs.Confined(dirs, deny...)
	if err != nil {
		return nil, nil, nil, err
	}
	log.Info("host folders of the tools", "roots", host.Roots())
	b, err := mcp.New(mcp.Config{Deps: tools.NewDeps(reg, log, tools.WithHost(host)), Logger: log, Version: version})
	if err != nil {
		return nil, nil, nil, err
	}
	return b, reg, log, nil
}

func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fl.SetOutput(stderr)
	home := fl.String("home", "", "registry directory (default $CUA_HOME or ~/.cua)")
	var roots rootsFlag
	fl.Var(&roots, "root", "a folder upload/download may use (repeatable; default $"+envRoots+", else the working directory)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	b, reg, _, err := newBridge(*home, roots, "", stderr)
	if err != nil {
		fmt.Fprintln(stderr, "cua-bridge mcp:", err)
		return 1
	}
	defer reg.Close()
	defer b.Close()
	if err := b.RunStdio(ctx, stdin, stdout); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "cua-bridge mcp:", err)
		return 1
	}
	return 0
}

func runServe(ctx context.Context, args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	listen := fl.String("listen", mcp.DefaultListen, "address to serve MCP on")
	tokenFile := fl.String("token-file", "", "file holding the bearer token (default: generated once under $CUA_HOME/"+tokenFileName+")")
	home := fl.String("home", "", "registry directory (default $CUA_HOME or ~/.cua)")
	var roots rootsFlag
	fl.Var(&roots, "root", "a folder upload/download may use (repeatable; default $"+envRoots+", else the working directory)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	regDir, err := registry.Home(*home)
	if err != nil {
		fmt.Fprintln(stderr, "cua-bridge serve:", err)
		return 1
	}
	tf := *tokenFile
	if tf == "" {
		tf = filepath.Join(regDir, tokenFileName)
	}
	b, reg, log, err := newBridge(*home, roots, tf, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "cua-bridge serve:", err)
		return 1
	}
	defer reg.Close()
	defer b.Close()
	token, err := loadOrCreateToken(tf, *tokenFile == "")
	if err != nil {
		fmt.Fprintln(stderr, "cua-bridge serve:", err)
		return 1
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(stderr, "cua-bridge serve:", err)
		return 1
	}
	h := b.HTTPHandler(mcp.HTTPOptions{Token: token, Loopback: loopback.Addr(ln.Addr().String())})
	// The token itself is never logged: only where to read it.
	log.Info("serving MCP", "url", "http://"+ln.Addr().String()+mcp.MCPPath, "token_file", tf)
	if err := mcp.Serve(ctx, ln, h, log); err != nil {
		fmt.Fprintln(stderr, "cua-bridge serve:", err)
		return 1
	}
	return 0
}

// loadOrCreateToken reads the bearer token from path; when create is set and
// the file does not exist, it writes a fresh random token there (0600).
func loadOrCreateToken(path string, create bool) (string, error) {
	// As mcp-config reads it, so that the config and the server agree.
	tok, err := registry.ReadTokenFile(path)
	if err == nil || api.KindOf(err) != api.KindNotFound || !create {
		return tok, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	tok = hex.EncodeToString(raw)
	// O_EXCL: a second bridge starting at the same time keeps the first token.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return loadOrCreateToken(path, false)
	}
	if err != nil {
		return "", fmt.Errorf("create token file: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", err
	}
	return tok, f.Close()
}
