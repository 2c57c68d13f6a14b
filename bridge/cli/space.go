package cli

import (
	"context"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// probeTimeout bounds how long "space add" and "space ls" wait for one
// Space to answer: an offline Space must not hang the listing.
const probeTimeout = 5 * time.Second

const spaceUsage = `space add NAME URL [--token-file F | --token T] [--fingerprint sha256:... | --ca-file F] [--no-verify]
       cua-bridge space ls [--json]
       cua-bridge space rm NAME`

func (env Env) runSpace(ctx context.Context, args []string) int {
	if len(args) == 0 {
		return env.usage("usage: cua-bridge %s", spaceUsage)
	}
	switch args[0] {
	case "add":
		return env.spaceAdd(ctx, args[1:])
	case "ls", "list":
		return env.spaceLs(ctx, args[1:])
	case "rm", "remove":
		return env.spaceRm(args[1:])
	case "-h", "--help", "help":
		fmt.Fprintf(env.Stdout, "usage: cua-bridge %s\n", spaceUsage)
		return ExitOK
	}
	return env.usage("space: unknown subcommand %q (add, ls, rm)", args[0])
}

func (env Env) spaceAdd(ctx context.Context, args []string) int {
	fs := env.newFlags("space add", "space add NAME URL [--token-file F | --token T] [--fingerprint sha256:... | --ca-file F] [--no-verify]")
	tokenFile := fs.String("token-file", "", "file holding the Space's spacesd token")
	token := fs.String("token", "", "the Space's spacesd token (prefer --token-file: flags show in ps)")
	fingerprint := fs.String("fingerprint", "", "pin the https Space's certificate: the sha256:... cua-spacesd printed (--tls-self-signed)")
	caFile := fs.String("ca-file", "", "trust the https Space's certificate by the CAs in this PEM file")
	noVerify := fs.Bool("no-verify", false, "register without asking the Space (it may be offline)")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 2 {
		fs.Usage()
		return ExitUsage
	}
	name, url := pos[0], pos[1]
	if *token != "" && *tokenFile != "" {
		return env.usage("space add: give the token one way only: --token or --token-file")
	}
	tok := *token
	if *tokenFile != "" {
		// One token, as the daemon reads its own file: a file of several
		// (the registry's tokens.json) would go whole to the Space.
		if tok, err = registry.ReadTokenFile(*tokenFile); err != nil {
			return env.fail(ExitFailure, err)
		}
	}
	if err := registry.ValidName(name); err != nil {
		return env.fail(ExitFailure, err)
	}
	norm, err := registry.NormalizeURL(url)
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	entry, err := registry.CheckTLS(registry.Entry{Name: name, URL: norm, Token: tok, Fingerprint: *fingerprint, CAFile: *caFile})
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	reg, err := env.registry()
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	st := spaceStatus{}
	if !*noVerify {
		// Ask before registering: a wrong URL, token or certificate is
		// better refused now than found at the first use.
		c, err := reg.ClientFor(entry)
		if err != nil {
			return env.fail(ExitFailure, err)
		}
		st = probe(ctx, c)
		if st.err != nil {
			return env.fail(ExitFailure, st.err)
		}
	}
	e, err := reg.AddEntry(ctx, entry)
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	if st.version != "" {
		fmt.Fprintf(env.Stdout, "added %s (%s, cua-spacesd %s)\n", e.Name, e.URL, st.version)
	} else {
		fmt.Fprintf(env.Stdout, "added %s (%s, not verified)\n", e.Name, e.URL)
	}
	return ExitOK
}

func (env Env) spaceRm(args []string) int {
	fs := env.newFlags("space rm", "space rm NAME")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return ExitUsage
	}
	reg, err := env.registry()
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	if err := reg.Remove(pos[0]); err != nil {
		return env.fail(ExitFailure, err)
	}
	fmt.Fprintf(env.Stdout, "removed %s\n", pos[0])
	return ExitOK
}

// spaceRow is one line of "space ls" (and its --json form).
type spaceRow struct {
	Name     string   `json:"name"`
	URL      string   `json:"url"`
	Online   bool     `json:"online"`
	Status   string   `json:"status"`
	Version  string   `json:"version,omitempty"`
	Features []string `json:"features,omitempty"`
	// Role is the user's on a relay computer: owner, or viewer or editor
	// for one shared with them.
	Role string `json:"role,omitempty"`
}

func (env Env) spaceLs(ctx context.Context, args []string) int {
	fs := env.newFlags("space ls", "space ls [--json]")
	return env.onRegistry(fs, args, 0, 0, func(reg *registry.Registry, _ []string) (any, func(io.Writer) error, error) {
		rows, err := env.spaceRows(ctx, reg)
		if err != nil {
			return nil, nil, err
		}
		return rows, func(w io.Writer) error { return writeSpaceRows(w, rows) }, nil
	})
}

// spaceRows probes every Space of the registry, local ones first, then the
// relay's computers.
func (env Env) spaceRows(ctx context.Context, reg *registry.Registry) ([]spaceRow, error) {
	entries, err := reg.List()
	if err != nil {
		return nil, err
	}
	rows := make([]spaceRow, len(entries))
	var wg sync.WaitGroup
	for i, e := range entries {
		rows[i] = spaceRow{Name: e.Name, URL: e.URL}
		c, err := reg.ClientFor(e)
		if err != nil {
			rows[i].Status = string(api.KindOf(err))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := probe(ctx, c)
			rows[i].Online = st.err == nil
			rows[i].Version = st.version
			rows[i].Features = st.features
			rows[i].Status = "online"
			if st.err != nil {
				rows[i].Status = string(api.KindOf(st.err))
			}
		}()
	}
	// Local probes write rows by index: done before the relay's rows grow it.
	wg.Wait()
	// The relay's computers follow the local Spaces; a relay that cannot
	// be reached is said on stderr and leaves the local listing whole.
	lctx, cancel := context.WithTimeout(ctx, probeTimeout)
	rs, rerr := reg.RelaySpaces(lctx)
	cancel()
	if rerr != nil {
		e := api.AsError(rerr)
		fmt.Fprintf(env.Stderr, "cua-bridge: relay not listed: %s: %s\n", e.Kind, e.Error())
	}
	for _, r := range rs {
		rows = append(rows, relayRow(r))
		if !r.Computer.Online {
			continue
		}
		c, err := reg.ClientFor(r.Entry)
		if err != nil {
			continue
		}
		i := len(rows) - 1
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := probe(ctx, c)
			if st.err != nil {
				rows[i].Status = string(api.KindOf(st.err))
				return
			}
			rows[i].Version, rows[i].Features = st.version, st.features
		}()
	}
	wg.Wait()
	return rows, nil
}

// writeSpaceRows prints space ls for a person.
func writeSpaceRows(w io.Writer, rows []spaceRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tURL\tONLINE\tVERSION")
	for _, r := range rows {
		online := "yes"
		if !r.Online {
			online = "no (" + r.Status + ")"
		}
		v := r.Version
		if v == "" {
			v = "-"
		}
		name := r.Name
		if r.Role != "" && r.Role != string(protocol.RoleOwner) {
			name += " (shared, " + r.Role + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, r.URL, online, v)
	}
	return tw.Flush()
}

// spaceStatus is what probing a Space found.
type spaceStatus struct {
	version  string
	features []string
	err      error
}

// probe asks a Space who it is (unauthenticated, tells "no spacesd" apart)
// and what it supports (authenticated, tells a wrong token apart).
func probe(ctx context.Context, c *client.Client) spaceStatus {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	h, err := c.Health(ctx)
	if err != nil {
		return spaceStatus{err: err}
	}
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return spaceStatus{version: h.Version, err: err}
	}
	st := spaceStatus{version: caps.Version}
	for _, f := range api.AllFeatures {
		if ok, _ := caps.Supports(f); ok {
			st.features = append(st.features, string(f))
		}
	}
	return st
}
