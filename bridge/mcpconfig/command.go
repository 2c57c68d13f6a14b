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

Prints the configuration that connects an MCP host to this cua-bridge (stdout)
and where to put it (stderr). NAME: %s (default %s).
`

// Main runs `cua-bridge mcp-config` and returns the exit code.
func Main(args []string, d Defaults, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("mcp-config", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {
		fmt.Fprintf(stderr, usageText, clientList(), Generic)
		fl.PrintDefaults()
	}
	client := fl.String("client", string(Generic), "the MCP host to configure")
	home := fl.String("home", "", "registry directory (default $CUA_HOME or ~/.cua)")
	useHTTP := fl.Bool("http", false, "the streamable-HTTP form, for a running cua-bridge serve, instead of stdio")
	listen := fl.String("listen", d.Listen, "the address serve listens on (with --http)")
	tokenFile := fl.String("token-file", "", "serve's token file (with --http; default $CUA_HOME/"+d.TokenFileName+")")
	showToken := fl.Bool("show-token", false, "write the token itself into the config (with --http)")
	var roots rootList
	fl.Var(&roots, "root", "a host folder the upload and download tools may use (repeatable; default: this working directory; stdio form only: serve has its own)")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fl.NArg() > 0 {
		return usageError(stderr, "unexpected argument %q", fl.Arg(0))
	}
	if !*useHTTP {
		var httpOnly []string
		fl.Visit(func(f *flag.Flag) {
			if f.Name == "listen" || f.Name == "token-file" || f.Name == "show-token" {
				httpOnly = append(httpOnly, "--"+f.Name)
			}
		})
		if len(httpOnly) > 0 {
			return usageError(stderr, "%v only apply with --http", httpOnly)
		}
	} else if len(roots) > 0 {
		return usageError(stderr, "--root applies to the stdio form: give it to `cua-bridge serve`, which runs the HTTP form")
	}

	srv, notes, err := server(d, *home, *useHTTP, *listen, *tokenFile, *showToken)
	if err == nil && !*useHTTP {
		srv.Roots, err = absRoots(roots)
	}
	if err != nil {
		return fail(stderr, err)
	}
	cfg, err := Render(Client(*client), srv)
	if err != nil {
		return fail(stderr, err)
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

func usageError(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "cua-bridge mcp-config: "+format+"\n", args...)
	fmt.Fprintf(stderr, usageText, clientList(), Generic)
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

// rootList is the repeatable --root flag.
type rootList []string

func (r *rootList) String() string     { return fmt.Sprint(*r) }
func (r *rootList) Set(v string) error { *r = append(*r, v); return nil }

// absRoots makes the roots absolute; none means the working directory.
func absRoots(roots []string) ([]string, error) {
	if len(roots) == 0 {
		roots = []string{"."}
	}
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, api.Errorf(api.KindEnv, "--root %s: %w", r, err)
		}
		out = append(out, abs)
	}
	return out, nil
}
