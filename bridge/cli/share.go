package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/trycua/cua-spacesd/bridge/registry"
	"github.com/trycua/cua-spacesd/bridge/relayreg"
	"github.com/trycua/cua-spacesd/bridge/tools"
)

// The sharing commands: share, unshare, shares, on relayreg as the tools
// share_space, unshare_space and space_shares.

func (env Env) runShare(ctx context.Context, args []string) int {
	fs := env.newFlags("share", "share SPACE WHO [--role viewer|editor] [--json]")
	role := fs.String("role", "viewer", "viewer (watch only) or editor (full use)")
	return env.onRegistry(fs, args, 2, 2, func(reg *registry.Registry, pos []string) (any, func(io.Writer) error, error) {
		r, err := relayreg.ParseRole(*role)
		if err != nil {
			return nil, nil, usageError{err}
		}
		return sharedAnswer(relayreg.Share(ctx, reg, pos[0], pos[1], r))
	})
}

func (env Env) runUnshare(ctx context.Context, args []string) int {
	fs := env.newFlags("unshare", "unshare SPACE [WHO] [--json]")
	return env.onRegistry(fs, args, 1, 2, func(reg *registry.Registry, pos []string) (any, func(io.Writer) error, error) {
		who := ""
		if len(pos) == 2 {
			who = pos[1]
		}
		return sharedAnswer(relayreg.Unshare(ctx, reg, pos[0], who))
	})
}

func (env Env) runShares(ctx context.Context, args []string) int {
	fs := env.newFlags("shares", "shares SPACE [--audit] [--json]")
	audit := fs.Bool("audit", false, "also print the newest audit lines")
	return env.onRegistry(fs, args, 1, 1, func(reg *registry.Registry, pos []string) (any, func(io.Writer) error, error) {
		s, err := relayreg.Shares(ctx, reg, pos[0], *audit)
		if err != nil {
			return nil, nil, err
		}
		return s, func(w io.Writer) error {
			fmt.Fprintln(w, tools.SharedText(s))
			for _, l := range s.Audit {
				fmt.Fprintf(w, "%s  %-8s %s  %s\n", time.UnixMilli(l.TSMS).UTC().Format(time.RFC3339), l.Action, l.Space, l.Detail)
			}
			return nil
		}, nil
	})
}

// sharedAnswer is the answer of share and unshare: the Space's shares.
func sharedAnswer(s *relayreg.Shared, err error) (any, func(io.Writer) error, error) {
	if err != nil {
		return nil, nil, err
	}
	return s, func(w io.Writer) error {
		_, err := fmt.Fprintln(w, tools.SharedText(s))
		return err
	}, nil
}
