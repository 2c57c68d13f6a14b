package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

const psUsage = "ps [--json] SPACE"

// runPs lists the Space's background processes: those exec, the MCP tools
// or any other client of the Space started, running or recently ended.
func (env Env) runPs(ctx context.Context, args []string) int {
	fs := env.newFlags("ps", psUsage)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return ExitUsage
	}
	c, _, err := env.client(pos[0])
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	list, err := c.Processes(ctx)
	if err != nil {
		return env.fail(ExitFailure, err)
	}
	if *asJSON {
		if list == nil {
			list = []api.ProcessInfo{}
		}
		return env.printJSON("ps", list)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPID\tSTATE\tSTARTED\tCOMMAND")
	for _, p := range list {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", p.ID, p.PID, processState(p), p.StartedAt.Local().Format(time.DateTime), strings.Join(p.Argv, " "))
	}
	if err := tw.Flush(); err != nil {
		return env.fail(ExitFailure, api.Errorf(api.KindIO, "ps: %w", err))
	}
	return ExitOK
}

// processState says in a word or two how a process is: "running", "exit
// 0", "signal TERM", "timed out".
func processState(p api.ProcessInfo) string {
	switch {
	case p.State != api.StateExited:
		return "running"
	case p.TimedOut:
		return "timed out"
	case p.Signal != "":
		return "signal " + p.Signal
	case p.ExitCode != nil:
		return fmt.Sprintf("exit %d", *p.ExitCode)
	}
	return "exited"
}
