package mcpconfig

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/registry"
)

// Defaults are what `cua-bridge serve` uses, handed in by main so that the
// config and the server it describes cannot disagree.
type Defaults struct {
	// Listen is serve's --listen default and Path where it answers MCP.
	Listen string
	Path   string
	// TokenFileName is serve's token file under the registry directory
	// (read, as serve reads it, with registry.ReadTokenFile).
	TokenFileName string
	// Executable is the bridge's path; "" means this process's own.
	Executable string
}

// Exit codes of Main.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

const usageText = `usage: cua-bridge mcp-config [--client NAME] [--home DIR] [--root DIR]...
       cua-bridge mcp-config [--client NAME] [--home DIR] --http [--listen ADDR] [--token-file FILE] [--show-token]
`

const helpText = `
Prints the configuration that connects an MCP host to this cua-bridge
(stdout, to redirect into a file) and a note on where to put it (stderr).

In the stdio form the host starts the bridge with --root for each folder the
upload and download tools may use, and nothing outside them: the --root
flags given here, else the directory mcp-config runs in. The note names the
roots, and warns when one holds your whole home directory. In the --http
form the roots are serve's own (its --root).

Flags:
`

// options are mcp-config's flags.
type options struct {
	client    string
	home      string
	roots     rootList
	http      bool
	listen    string
	tokenFile string
	showToken bool
}

// newFlags defines mcp-config's flags. A back-quoted word in a usage names
// the flag's value in --help; a default is written in the usage, in words.
func newFlags(d Defaults) (*flag.FlagSet, *options) {
	o := &options{}
	fl := flag.NewFlagSet("mcp-config", flag.ContinueOnError)
	fl.StringVar(&o.client, "client", string(Generic), "the MCP host to configure, `NAME` one of "+clientList()+" (default "+string(Generic)+")")
	fl.StringVar(&o.home, "home", "", "the registry `DIR` the bridge opens (default $CUA_HOME, else ~/.cua)")
	fl.Var(&o.roots, "root", "a folder `DIR` the upload and download tools may use, repeatable (stdio form only; default: the directory mcp-config runs in)")
	fl.BoolVar(&o.http, "http", false, "the streamable-HTTP form, for a running cua-bridge serve, instead of stdio")
	fl.StringVar(&o.listen, "listen", d.Listen, "the `ADDR` serve listens on (with --http; default "+d.Listen+")")
	fl.StringVar(&o.tokenFile, "token-file", "", "serve's token `FILE` (with --http; default $CUA_HOME/"+d.TokenFileName+")")
	fl.BoolVar(&o.showToken, "show-token", false, "write the token itself into the config (with --http; claude-code's line reads it from the token file, so it stays out of your shell history)")
	return fl, o
}

// printHelp writes the usage and one line per flag: the order below, then
// any flag it does not name, so that no flag goes unlisted.
func printHelp(w io.Writer, fl *flag.FlagSet) {
	fmt.Fprint(w, usageText, helpText)
	var left, right []string
	add := func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			arg = ""
		}
		left = append(left, strings.TrimSpace("--"+f.Name+" "+arg))
		right = append(right, usage)
	}
	listed := map[string]bool{}
	for _, name := range []string{"client", "home", "root", "http", "listen", "token-file", "show-token"} {
		if f := fl.Lookup(name); f != nil {
			add(f)
			listed[name] = true
		}
	}
	fl.VisitAll(func(f *flag.Flag) {
		if !listed[f.Name] {
			add(f)
		}
	})
	left, right = append(left, "--help"), append(right, "print this help")
	width := 0
	for _, l := range left {
		width = max(width, len(l))
	}
	for i := range left {
		fmt.Fprintf(w, "  %-*s  %s\n", width, left[i], right[i])
	}
}

// Main runs `cua-bridge mcp-config` and returns the exit code.
func Main(args []string, d Defaults, stdout, stderr io.Writer) int {
	fl, o := newFlags(d)
	fl.SetOutput(stderr)
	// The flag package prints its own error; help goes to stdout, in full.
	fl.Usage = func() {}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(stdout, fl)
			return exitOK
		}
		fmt.Fprint(stderr, usageText, helpHint)
		return exitUsage
	}
	if fl.NArg() > 0 {
		return usageError(stderr, "unexpected argument %q", fl.Arg(0))
	}
	if !o.http {
		var httpOnly []string
		fl.Visit(func(f *flag.Flag) {
			if f.Name == "listen" || f.Name == "token-file" || f.Name == "show-token" {
				httpOnly = append(httpOnly, "--"+f.Name)
			}
		})
		if len(httpOnly) > 0 {
			return usageError(stderr, "%v only apply with --http", httpOnly)
		}
	} else if len(o.roots) > 0 {
		return usageError(stderr, "--root applies to the stdio form: give it to `cua-bridge serve`, which runs the HTTP form")
	}

	srv, notes, err := server(d, o.home, o.http, o.listen, o.tokenFile, o.showToken)
	if err == nil && !o.http {
		srv.Roots, err = absRoots(o.roots)
	}
	if err != nil {
		return fail(stderr, err)
	}
	cfg, err := Render(Client(o.client), srv)
	if err != nil {
		return fail(stderr, err)
	}
	if o.http {
		notes += "The upload and download tools use the folders `cua-bridge serve` was started with (its --root; default $CUA_BRIDGE_ROOTS, else the directory serve runs in).\n"
	} else {
		notes += rootsNote(srv.Roots, len(o.roots) == 0, userHome())
	}
	fmt.Fprint(stdout, cfg.Text)
	fmt.Fprint(stderr, cfg.Note+notes)
	return exitOK
}

// server gathers what the config names: this binary, the registry, and for
// --http the URL and token file of serve. notes are extra advice lines.
func server(d Defaults, home string, useHTTP bool, listen, tokenFile string, showToken bool) (Server, string, error) {
	exe, err := executable(d.Executable)
	if err != nil {
		return Server{}, "", err
	}
	dir, err := registry.Home(home)
	if err != nil {
		return Server{}, "", err
	}
	// Absolute: the host starts the bridge from a directory of its own.
	if dir, err = filepath.Abs(dir); err != nil {
		return Server{}, "", api.Errorf(api.KindEnv, "registry directory: %w", err)
	}
	s := Server{Command: exe, Home: dir}
	if !useHTTP {
		return s, "", nil
	}
	if s.URL, err = mcpURL(listen, d.Path); err != nil {
		return Server{}, "", err
	}
	explicit := tokenFile != ""
	if !explicit {
		tokenFile = filepath.Join(dir, d.TokenFileName)
	}
	if s.TokenFile, err = filepath.Abs(tokenFile); err != nil {
		return Server{}, "", api.Errorf(api.KindEnv, "token file: %w", err)
	}
	// Read even without --show-token: a file that holds more than one token
	// (the registry's tokens.json, say) would be pasted whole as the Bearer
	// value by the hosts' own indirections, and serve refuses it anyway.
	tok, err := registry.ReadTokenFile(s.TokenFile)
	kind := api.KindOf(err)
	notes := ""
	switch {
	case err == nil:
		if showToken {
			s.Token = tok
			s.TokenFileExact = holdsExactly(s.TokenFile, tok)
		}
	case kind == api.KindInvalidArgument:
		return Server{}, "", err
	case showToken:
		return Server{}, "", api.AsError(err).
			WithHint("start `cua-bridge serve` once with this registry (it writes the token there), or pass the --token-file that serve uses")
	case kind == api.KindNotFound && !explicit:
		notes = "Note: " + s.TokenFile + " does not exist yet: `cua-bridge serve` writes it when it first starts with this registry.\n"
	case kind == api.KindNotFound:
		notes = "Note: " + s.TokenFile + " does not exist: `cua-bridge serve --token-file` needs it to hold the token.\n"
	}
	return s, notes, nil
}

// holdsExactly reports whether the file at path holds tok and nothing else
// bar line ends after it (as serve writes it), so that a shell's $(cat path),
// which drops the final line ends only, yields tok.
func holdsExactly(path, tok string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, registry.MaxTokenFileBytes+1))
	return err == nil && strings.TrimRight(string(b), "\n") == tok
}

// executable is the bridge's absolute path with symlinks resolved, so the
// host runs this very binary whatever its PATH holds.
func executable(path string) (string, error) {
	var err error
	if path == "" {
		if path, err = os.Executable(); err != nil {
			return "", api.Errorf(api.KindEnv, "find this program's path: %w", err).WithHint("")
		}
	}
	if path, err = filepath.EvalSymlinks(path); err != nil {
		return "", api.Errorf(api.KindEnv, "resolve this program's path: %w", err).WithHint("")
	}
	return filepath.Abs(path)
}

// mcpURL is where a host reaches serve listening on listen. A wildcard
// address is reached through loopback of its family: the bridge refuses a
// non-loopback Host when it listens on loopback, and the token should not
// cross the network in clear when it does not have to.
func mcpURL(listen, path string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port == "" {
		return "", api.Errorf(api.KindInvalidArgument, "--listen %q is not HOST:PORT", listen).
			WithHint("give the address serve listens on, e.g. 127.0.0.1:3210")
	}
	if port == "0" {
		return "", api.Errorf(api.KindInvalidArgument, "--listen %q: port 0 makes serve pick a random port, which a config cannot name", listen).
			WithHint("give the port serve listens on")
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if err == nil && ip.Is6() {
			host = "::1"
		}
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: path}
	return u.String(), nil
}

// helpHint follows the short usage printed on bad input.
const helpHint = "Every flag: cua-bridge mcp-config --help\n"

func usageError(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "cua-bridge mcp-config: "+format+"\n", args...)
	fmt.Fprint(stderr, usageText, helpHint)
	return exitUsage
}

// fail prints err with its kind and hint; bad input is a usage error.
func fail(stderr io.Writer, err error) int {
	e := api.AsError(err)
	fmt.Fprintf(stderr, "cua-bridge mcp-config: %s: %s\n", e.Kind, e.Error())
	if e.Hint != "" {
		fmt.Fprintf(stderr, "hint: %s\n", e.Hint)
	}
	if e.Kind == api.KindInvalidArgument {
		return exitUsage
	}
	return exitFailure
}
