package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/trycua/cua-spacesd/bridge/relayreg"
	"github.com/trycua/cua-spacesd/bridge/tools"
)

// The sharing commands: share, unshare, shares, on relayreg as the tools
// share_space, unshare_space and space_shares.

func (env Env) runShare(ctx context.Context, args []string) int {
	fs := env.newFlags("share", "share SPACE WHO [--role viewer|editor] [--json]")
	role := fs.String("role", "viewer", "viewer (watch only) or editor (full use)")
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 2 {
		fs.Usage()
		return ExitUsage
	}
	r, err := relayreg.ParseRole(*role)
	if err != nil {
		return env.fail(ExitUsage, err)
	}
	reg, err := env.registry()
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	s, err := relayreg.Share(ctx, reg, pos[0], pos[1], r)
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	return env.printShared(s, *asJSON)
}

func (env Env) runUnshare(ctx context.Context, args []string) int {
	fs := env.newFlags("unshare", "unshare SPACE [WHO] [--json]")
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 && len(pos) != 2 {
		fs.Usage()
		return ExitUsage
	}
	who := ""
	if len(pos) == 2 {
		who = pos[1]
	}
	reg, err := env.registry()
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	s, err := relayreg.Unshare(ctx, reg, pos[0], who)
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	return env.printShared(s, *asJSON)
}

func (env Env) runShares(ctx context.Context, args []string) int {
	fs := env.newFlags("shares", "shares SPACE [--audit] [--json]")
	audit := fs.Bool("audit", false, "also print the newest audit lines")
	asJSON := fs.Bool("json", false, "print the answer as JSON")
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
	s, err := relayreg.Shares(ctx, reg, pos[0], *audit)
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	if *asJSON {
		return env.printJSON("write", s)
	}
	fmt.Fprintln(env.Stdout, tools.SharedText(s))
	for _, l := range s.Audit {
		fmt.Fprintf(env.Stdout, "%s  %-8s %s  %s\n", time.UnixMilli(l.TSMS).UTC().Format(time.RFC3339), l.Action, l.Space, l.Detail)
	}
	return ExitOK
}

func (env Env) printShared(s *relayreg.Shared, asJSON bool) int {
	if asJSON {
		return env.printJSON("write", s)
	}
	fmt.Fprintln(env.Stdout, tools.SharedText(s))
	return ExitOK
}
