package cli

import (
	"errors"
	"flag"
	"io"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/bridge/registry"
)

// A registry command's run answers its value (printed with --json) and
// how to print it for a person.
type runFunc func(reg *registry.Registry, pos []string) (answer any, text func(io.Writer) error, err error)

// usageError marks an error of run that is the caller's usage (a bad flag
// value found once the flags were parsed): it exits with ExitUsage.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// onRegistry is the frame every registry command shares: --json added to
// fs, the positional arguments counted (minArgs to maxArgs, else the
// usage), the registry opened, run, and its answer printed.
func (env Env) onRegistry(fs *flag.FlagSet, args []string, minArgs, maxArgs int, run runFunc) int {
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) < minArgs || len(pos) > maxArgs {
		fs.Usage()
		return ExitUsage
	}
	reg, err := env.registry()
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	v, text, err := run(reg, pos)
	if err != nil {
		if errors.As(err, new(usageError)) {
			return env.fail(ExitUsage, err)
		}
		return env.fail(ExitFailure, err)
	}
	if *asJSON {
		return env.printJSON("write", v)
	}
	if err := text(env.Stdout); err != nil {
		return env.fail(ExitFailure, api.Errorf(api.KindIO, "write: %w", err))
	}
	return ExitOK
}
