package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/relayd"
)

// drain drains the running node through its admin socket.
func drain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("drain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", os.Getenv(dataDirEnv), "the data dir of the running relay")
	retry := fs.Duration("retry-after", relayd.DefaultDrainRetryAfter, "the go_away's reconnect delay, and the Retry-After of refused attaches")
	grace := fs.Duration("grace", relayd.DefaultDrainGrace, "how long what is in flight may finish before the node ends the sessions left")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dataDir == "" || fs.NArg() != 0 {
		fmt.Fprintf(stderr, "cua-relay: usage: drain --data-dir DIR (or $%s) [--retry-after 2s] [--grace 30s]\n", dataDirEnv)
		return 2
	}
	// On the wire a zero is the server's default: the flags want more.
	if *retry < time.Millisecond || *grace < time.Millisecond {
		fmt.Fprintln(stderr, "cua-relay: drain: --retry-after and --grace must be at least 1ms")
		return 2
	}
	req := relayapi.DrainRequest{RetryAfterMS: retry.Milliseconds(), GraceMS: grace.Milliseconds()}
	rep, err := relayd.NewAdminClient(*dataDir).Drain(ctx, req)
	if err != nil {
		e := api.AsError(err)
		fmt.Fprintf(stderr, "cua-relay: %s: %s\n", e.Kind, e.Message)
		return 1
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "node %s is draining: %d session(s) told to go away (reconnect after %s); %d left, %d cut after the %s grace, in %s\n",
		rep.Node, rep.Sessions, *retry, rep.Left, rep.Cut, *grace, time.Duration(rep.TookMS)*time.Millisecond)
	fmt.Fprintln(stdout, "it refuses new attaches until it stops; stop it now (SIGTERM)")
	return 0
}

// status prints the running node's state, its cluster and the store's
// replication.
func status(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", os.Getenv(dataDirEnv), "the data dir of the running relay")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dataDir == "" || fs.NArg() != 0 {
		fmt.Fprintf(stderr, "cua-relay: usage: status --data-dir DIR (or $%s) [--json]\n", dataDirEnv)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := relayd.NewAdminClient(*dataDir)
	st, err := c.Node(ctx)
	var store relayapi.Status
	if err == nil {
		store, err = c.Status(ctx)
	}
	if err != nil {
		e := api.AsError(err)
		fmt.Fprintf(stderr, "cua-relay: %s: %s\n", e.Kind, e.Message)
		return 1
	}
	if *asJSON {
		return printJSON(stdout, struct {
			relayapi.NodeStatus
			Store relayapi.Status `json:"store"`
		}{st, store})
	}
	state := "serving"
	if st.Draining {
		state = "draining since " + time.UnixMilli(st.DrainingSinceMS).UTC().Format(time.RFC3339) + " (refuses new attaches)"
	}
	fmt.Fprintf(stdout, "node %s (cua-relay %s): %s; %d session(s) attached; URLs %s\n", st.Node, st.Version, state, st.Sessions, strings.Join(st.URLs, ", "))
	printStatus(stdout, store)
	return 0
}

func printJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return 1
	}
	return 0
}
