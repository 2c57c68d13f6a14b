package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/bridge/relayreg"
)

const relayUsage = `relay login --url URL --token-file FILE [--fingerprint sha256:... | --ca FILE]
       cua-bridge relay logout
       cua-bridge relay status [--json]
       cua-bridge relay register SPACE [--name NAME] [--json]
       cua-bridge relay unregister SPACE [--json]`

func (env Env) runRelay(ctx context.Context, args []string) int {
	if len(args) == 0 {
		return env.usage("usage: cua-bridge %s", relayUsage)
	}
	switch args[0] {
	case "login":
		return env.relayLogin(ctx, args[1:])
	case "logout":
		return env.relayLogout(args[1:])
	case "status":
		return env.relayStatus(ctx, args[1:])
	case "register":
		return env.relayRegister(ctx, args[1:])
	case "unregister":
		return env.relayUnregister(ctx, args[1:])
	case "-h", "--help", "help":
		fmt.Fprintf(env.Stdout, "usage: cua-bridge %s\n", relayUsage)
		return ExitOK
	}
	return env.usage("relay: unknown subcommand %q (login, logout, status, register, unregister)", args[0])
}

func (env Env) relayLogin(ctx context.Context, args []string) int {
	fs := env.newFlags("relay login", "relay login --url URL --token-file FILE [--fingerprint sha256:... | --ca FILE]")
	url := fs.String("url", "", "the relay's URL: https://HOST[:PORT]")
	tokenFile := fs.String("token-file", "", "file holding your relay API token (cuau_..., from cua-relay token create USER)")
	fingerprint := fs.String("fingerprint", "", "pin the relay's certificate: the sha256:... cua-relay printed (--tls-self-signed)")
	ca := fs.String("ca", "", "trust the relay's certificate by the CAs in this PEM file")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 0 || *url == "" || *tokenFile == "" {
		fs.Usage()
		return ExitUsage
	}
	tok, err := registry.ReadTokenFile(*tokenFile)
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	reg, err := env.registry()
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	me, err := reg.LoginRelay(ctx, registry.RelayLogin{URL: *url, Token: tok, Fingerprint: *fingerprint, CAFile: *ca})
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	l, err := reg.Relay()
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	fmt.Fprintf(env.Stdout, "logged in to %s as %s\n", l.URL, me.User.Name)
	return ExitOK
}

func (env Env) relayLogout(args []string) int {
	fs := env.newFlags("relay logout", "relay logout")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 0 {
		fs.Usage()
		return ExitUsage
	}
	reg, err := env.registry()
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	was, err := reg.LogoutRelay()
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	if !was {
		fmt.Fprintln(env.Stdout, "not logged in to a relay")
		return ExitOK
	}
	fmt.Fprintln(env.Stdout, "logged out of the relay")
	return ExitOK
}

// relayStatusJSON is relay status --json.
type relayStatusJSON struct {
	URL       string     `json:"url"`
	User      string     `json:"user"`
	UserID    string     `json:"user_id"`
	Computers []spaceRow `json:"computers"`
}

func (env Env) relayStatus(ctx context.Context, args []string) int {
	fs := env.newFlags("relay status", "relay status [--json]")
	return env.onRegistry(fs, args, 0, 0, func(reg *registry.Registry, _ []string) (any, func(io.Writer) error, error) {
		c, l, err := reg.RelayClient()
		if err != nil {
			return nil, nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		me, err := c.Me(ctx)
		if err != nil {
			return nil, nil, err
		}
		rs, err := reg.RelaySpaces(ctx)
		if err != nil {
			return nil, nil, err
		}
		out := relayStatusJSON{URL: l.URL, User: me.User.Name, UserID: me.User.ID, Computers: []spaceRow{}}
		for _, r := range rs {
			out.Computers = append(out.Computers, relayRow(r))
		}
		return out, out.write, nil
	})
}

// write prints relay status for a person.
func (out relayStatusJSON) write(w io.Writer) error {
	fmt.Fprintf(w, "relay %s, logged in as %s\n", out.URL, out.User)
	if len(out.Computers) == 0 {
		_, err := fmt.Fprintln(w, "no computers yet: cua-bridge relay register SPACE publishes one")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SPACE\tONLINE\tVERSION")
	for _, r := range out.Computers {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, yesNo(r.Online), dash(r.Version))
	}
	return tw.Flush()
}

// relayRow is a relay computer as space ls and relay status show it.
func relayRow(r registry.RelaySpace) spaceRow {
	row := spaceRow{Name: r.Entry.Name, URL: r.Entry.URL, Online: r.Computer.Online, Status: "offline", Version: r.Computer.DaemonVersion, Role: string(r.Computer.Role)}
	if r.Computer.Online {
		row.Status = "online"
	}
	return row
}

func (env Env) relayRegister(ctx context.Context, args []string) int {
	fs := env.newFlags("relay register", "relay register SPACE [--name NAME] [--json]")
	name := fs.String("name", "", "the computer's name on the relay (default: the Space's name)")
	return env.onRegistry(fs, args, 1, 1, func(reg *registry.Registry, pos []string) (any, func(io.Writer) error, error) {
		r, err := relayreg.Register(ctx, reg, pos[0], *name)
		if err != nil {
			return nil, nil, err
		}
		return r, func(w io.Writer) error {
			state := "online"
			if !r.Online {
				state = "not connected yet (it keeps trying; cua-bridge relay status shows when it is)"
			}
			_, err := fmt.Fprintf(w, "%s is on the relay as %s (%s), %s\n", r.Space, r.RelaySpace, r.URL, state)
			return err
		}, nil
	})
}

func (env Env) relayUnregister(ctx context.Context, args []string) int {
	fs := env.newFlags("relay unregister", "relay unregister SPACE [--json]")
	return env.onRegistry(fs, args, 1, 1, func(reg *registry.Registry, pos []string) (any, func(io.Writer) error, error) {
		r, err := relayreg.Unregister(ctx, reg, pos[0])
		if err != nil {
			return nil, nil, err
		}
		return r, func(w io.Writer) error {
			was := "is off"
			if !r.Unregistered {
				was = "was not on"
			}
			_, err := fmt.Fprintf(w, "%s %s the relay\n", r.Space, was)
			return err
		}, nil
	})
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
