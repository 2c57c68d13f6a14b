// Package cli is the human command line of cua-bridge: the registry
// (space add|ls|rm), the relay (relay login|logout|status|register|unregister), sharing
// (share, unshare, shares), commands (exec), background processes (ps, logs), an
// interactive terminal (shell), file copies (cp), the desktop viewer (view)
// and screenshots (screenshot). It
// runs on the same registry and spacesd client as the MCP tools.
//
// One file per command; this file holds the dispatch and what they share.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"golang.org/x/term"
)

// Exit codes of the commands that do not pass a remote exit code through.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
	// ExitBridge is what exec and shell answer when they themselves fail
	// (not the command in the Space): 255, as ssh does, so that it stands
	// apart from the small codes commands use.
	ExitBridge = 255
)

// Commands are the subcommands Main serves.
var Commands = []string{"space", "exec", "ps", "logs", "shell", "cp", "view", "screenshot", "relay", "share", "unshare", "shares"}

// Env is what a command reads and writes. Tests build one around a PTY or
// buffers; Main builds it around the process's own streams.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Home is the registry directory ("" = $CUA_HOME or ~/.cua).
	Home string
	// Clients builds the client of a Space (nil = registry.PlainClients):
	// the CLI reaches Spaces the way the MCP tools do.
	Clients registry.ClientFactory
	// Getenv reads the environment (nil = os.Getenv): $BROWSER for view.
	Getenv func(string) string

	// reg is the command's registry, opened at its first use (Run sets
	// it up): a command that never needs one, or fails on its flags,
	// does not create $CUA_HOME.
	reg *lazyRegistry
}

// lazyRegistry opens the registry once, when a command first asks for it.
type lazyRegistry struct {
	once sync.Once
	r    *registry.Registry
	err  error
}

func (l *lazyRegistry) close() {
	if l.r != nil {
		l.r.Close()
	}
}

// Main runs one human subcommand with the process's stdin and returns the
// process exit code.
func Main(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) int {
	return Run(ctx, Env{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr}, cmd, args)
}

// Run runs one human subcommand in env and returns the exit code.
func Run(ctx context.Context, env Env, cmd string, args []string) int {
	// One registry for the command, so every client it takes (a probe,
	// then the call) comes from one factory and cache, as the MCP tools'
	// do.
	env.reg = &lazyRegistry{}
	defer env.reg.close()
	switch cmd {
	case "space":
		return env.runSpace(ctx, args)
	case "exec":
		return env.runExec(ctx, args)
	case "ps":
		return env.runPs(ctx, args)
	case "logs":
		return env.runLogs(ctx, args)
	case "shell":
		return env.runShell(ctx, args)
	case "cp":
		return env.runCp(ctx, args)
	case "view":
		return env.runView(ctx, args)
	case "screenshot":
		return env.runScreenshot(ctx, args)
	case "relay":
		return env.runRelay(ctx, args)
	case "share":
		return env.runShare(ctx, args)
	case "unshare":
		return env.runUnshare(ctx, args)
	case "shares":
		return env.runShares(ctx, args)
	}
	fmt.Fprintf(env.Stderr, "cua-bridge: unknown command %q (%s)\n", cmd, strings.Join(Commands, ", "))
	return ExitUsage
}

// cliHints replace the daemon's hints (written for API callers) where a
// person at this command line has a better next step.
var cliHints = map[api.Kind]string{
	api.KindUnauthenticated:     "re-add the Space with its current token: cua-bridge space add NAME URL --token-file FILE",
	api.KindRelay:               "check that the relay is up and the computer online: cua-bridge relay status",
	api.KindSpacesdNotAvailable: "check the URL: the Space must run cua-spacesd (port 3211 by default)",
	api.KindNotFound:            "cua-bridge space ls lists the registered Spaces",
	api.KindCapabilityMissing:   "cua-bridge space ls --json lists what each Space supports",
	// The message names the argument at fault; the API hint points at
	// route documentation a person at the command line does not need.
	api.KindInvalidArgument: "",
}

// fail prints err for a person (kind and message, then the hint) and
// returns code.
func (env Env) fail(code int, err error) int {
	e := api.AsError(err)
	kind := string(e.Kind)
	if e.Reason != "" {
		kind += " (" + e.Reason + ")"
	}
	fmt.Fprintf(env.Stderr, "cua-bridge: %s: %s\n", kind, e.Error())
	hint := e.Hint
	// A hint that names the relay login is the next step already.
	if h, ok := cliHints[e.Kind]; ok && (e.Kind != api.KindNotFound || strings.Contains(strings.ToLower(e.Message), "space")) && !strings.Contains(e.Hint, "relay login") {
		hint = h
	}
	if hint != "" {
		fmt.Fprintf(env.Stderr, "hint: %s\n", hint)
	}
	return code
}

// usage prints a usage error and returns ExitUsage.
func (env Env) usage(format string, args ...any) int {
	fmt.Fprintf(env.Stderr, "cua-bridge: "+format+"\n", args...)
	return ExitUsage
}

// registry is the command's registry: every command opens it here, and
// takes every client of a Space from it.
func (env Env) registry() (*registry.Registry, error) {
	if env.reg == nil { // a command called without Run
		env.reg = &lazyRegistry{}
	}
	env.reg.once.Do(func() {
		env.reg.r, env.reg.err = registry.Open(env.Home, registry.WithClients(env.Clients))
	})
	return env.reg.r, env.reg.err
}

// client resolves a Space id in the registry and returns its client.
func (env Env) client(id string) (*client.Client, registry.Entry, error) {
	reg, err := env.registry()
	if err != nil {
		return nil, registry.Entry{}, err
	}
	return reg.Client(id)
}

// newFlags returns a flag set that reports to stderr and never exits.
func (env Env) newFlags(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "usage: cua-bridge %s\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags wherever they stand among the positional arguments
// (so "cp a b --force" works as well as "cp --force a b") and stops at "--":
// what follows it is returned apart, untouched.
func parseArgs(fs *flag.FlagSet, args []string) (positional, rest []string, err error) {
	for i, a := range args {
		if a == "--" {
			rest = append([]string{}, args[i+1:]...)
			args = args[:i]
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, rest, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// isTerminal reports whether v is a terminal (for progress bars and raw mode).
func isTerminal(v any) (*os.File, bool) {
	f, ok := v.(*os.File)
	if !ok {
		return nil, false
	}
	fd, ok := fdOf(f)
	return f, ok && term.IsTerminal(fd)
}

// fdOf returns f's descriptor without f.Fd(), which would switch it to
// blocking mode and so take away the read deadline that lets the shell stop
// its input reader.
func fdOf(f *os.File) (int, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	fd := -1
	if err := rc.Control(func(u uintptr) { fd = int(u) }); err != nil {
		return 0, false
	}
	return fd, fd >= 0
}

// flagExit is the exit code of a flag error the flag set already reported:
// 0 for -h, ExitUsage otherwise.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	return ExitUsage
}

// printJSON writes v as indented JSON, the --json form of a listing;
// what names the listing in the error of a failed write.
func (env Env) printJSON(what string, v any) int {
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return env.fail(ExitFailure, api.Errorf(api.KindIO, "%s: %w", what, err))
	}
	return ExitOK
}
