// Command cua-relay lets a Space dial out and its owner reach it from
// anywhere, as relay:<computer>. Its state lives in an embedded NATS
// JetStream on the data dir; the admin commands talk to the running relay
// through its admin socket (DATA_DIR/admin.sock), never to the store.
//
//	cua-relay serve --listen ADDR --data-dir DIR [--tls-cert F --tls-key F | --tls-self-signed] [--public-url wss://...] [--node NAME]
//	                [--turn-listen ADDR|off] [--turn-tls-listen ADDR] [--turn-ip IP] [--turn-host HOST] [--turn-relay-ports LO-HI]
//	cua-relay user add NAME [--email E] --data-dir DIR
//	cua-relay user ls|rm ...
//	cua-relay token create USER --data-dir DIR     prints a user's API token, once
//	cua-relay computer ls --data-dir DIR
//	cua-relay metrics --data-dir DIR               the node's Prometheus metrics
//	cua-relay drain --data-dir DIR [--retry-after 2s] [--grace 30s]   move the node's Spaces to other nodes
//	cua-relay status --data-dir DIR                the node: sessions, draining or not; its cluster and the store's replication
//	cua-relay cluster key                          a new mesh key
//	cua-relay backup --to DIR --data-dir DIR       a backup of the whole store
//	cua-relay version
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/relayd"
	"github.com/trycua/cua-spacesd/relay/turnsvc"
)

// version is set at link time (-X main.version=...).
var version = "dev"

// dataDirEnv names the data dir when --data-dir is not given.
const dataDirEnv = "CUA_RELAY_DATA_DIR"

const usage = `usage: cua-relay <command> [flags]
  serve --listen ADDR --data-dir DIR [--tls-cert F --tls-key F | --tls-self-signed]
        [--public-url wss://HOST[:PORT]]... [--node NAME]
        [--turn-listen ADDR|off] [--turn-tls-listen ADDR] [--turn-ip IP] [--turn-host HOST]
        [--turn-relay-ports LO-HI]
        [--cluster NAME --cluster-listen HOST:PORT --routes nats://HOST:PORT,... --cluster-key-file F
         [--cluster-tls-cert F --cluster-tls-key F --cluster-tls-ca F]]
  cluster key                          prints a new mesh key (for --cluster-key-file; the same on every node)
  backup --to DIR --data-dir DIR       the running relay writes its whole store into DIR (a single node's jetstream dir)
  user add NAME [--email E] --data-dir DIR
  user ls --data-dir DIR
  user rm NAME --data-dir DIR          removes the user's tokens and computers too
  team add TEAM --data-dir DIR         a team: its users may share computers with each other
  team ls --data-dir DIR
  team member add|rm TEAM USER --data-dir DIR   a user is in at most one team
  token create USER --data-dir DIR     prints a new API token for USER, once
  computer ls --data-dir DIR
  metrics --data-dir DIR               prints the running relay's metrics (Prometheus text)
  drain --data-dir DIR [--retry-after 2s] [--grace 30s]
                                       before stopping a node: go_away to its Spaces (they attach
                                       to another node after the retry-after), new attaches refused
                                       (503), what is in flight kept for the grace; prints how many
                                       sessions left; the node drains until it stops (SIGUSR1 to
                                       serve drains with the defaults)
  status --data-dir DIR [--json]       the node: its sessions, and whether it drains; its cluster
                                       (nodes, metadata leader) and each stream's replicas and peers
  version
--data-dir defaults to $` + dataDirEnv + `.`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command; ctx ends serve (as a signal does).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "serve":
		return serve(ctx, args, stdout, stderr)
	case "user", "token", "computer", "team":
		return admin(ctx, cmd, args, stdout, stderr)
	case "metrics":
		return metrics(ctx, args, stdout, stderr)
	case "drain":
		return drain(ctx, args, stdout, stderr)
	case "status":
		return status(ctx, args, stdout, stderr)
	case "cluster":
		return clusterCmd(args, stdout, stderr)
	case "backup":
		return backup(ctx, args, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "cua-relay %s (protocol %d)\n", version, protocol.Version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "cua-relay: unknown command %q\n%s\n", cmd, usage)
	return 2
}

// listFlag is a repeatable flag whose values may also be comma lists.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			*l = append(*l, e)
		}
	}
	return nil
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", ":8443", "address to listen on")
	dataDir := fs.String("data-dir", os.Getenv(dataDirEnv), "where the relay keeps its state (JetStream), its TLS pair and its admin socket")
	certFile := fs.String("tls-cert", "", "serve HTTPS and WSS with this PEM certificate (chain)")
	keyFile := fs.String("tls-key", "", "the PEM private key of --tls-cert")
	selfSigned := fs.Bool("tls-self-signed", false, "serve with a key pair made once in the data dir (tls/) and reused; prints its sha256 fingerprint for Spaces to pin")
	insecure := fs.Bool("insecure-no-tls", false, "serve plain HTTP (only behind a proxy that terminates TLS)")
	var urls listFlag
	fs.Var(&urls, "public-url", "a wss:// URL Spaces reach this relay at (repeatable or comma-separated; default wss://<listen address>); in a cluster give every node's, on every node: Spaces redial the list")
	node := fs.String("node", "", "this node's name (default: the host name); unique in a cluster")
	var cf clusterFlags
	cf.register(fs)
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	turnListen := fs.String("turn-listen", fmt.Sprintf(":%d", turnsvc.DefaultPort), `TURN over UDP and TCP on this address ("off": no TURN)`)
	turnTLSListen := fs.String("turn-tls-listen", "", "TURN over TLS on this address, with the relay's certificate (default: off; 5349 by custom)")
	turnIP := fs.String("turn-ip", "", "the IP given to TURN clients as their relayed address (default: the --turn-listen IP, else this machine's first non-loopback IPv4; behind a 1:1 NAT give the public IP)")
	turnHost := fs.String("turn-host", "", "the TURN host put in credentials (default: the host each client reached the relay by)")
	turnPorts := fs.String("turn-relay-ports", "", "LO-HI: the UDP ports of relayed addresses, for one firewall rule (default: the kernel's ephemeral ports)")
	recheck := fs.Duration("recheck", relayd.DefaultRecheck, "how often the shares of people with live sessions are read again: the backstop for a revocation this node did not hear (at least 1s)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *recheck < time.Second {
		fmt.Fprintf(stderr, "cua-relay: --recheck %s: give 1s or more\n", *recheck)
		return 2
	}
	switch {
	case *dataDir == "":
		fmt.Fprintf(stderr, "cua-relay: give --data-dir (or $%s)\n", dataDirEnv)
		return 2
	case (*certFile == "") != (*keyFile == ""):
		fmt.Fprintln(stderr, "cua-relay: give --tls-cert and --tls-key together")
		return 2
	case *selfSigned && *certFile != "":
		fmt.Fprintln(stderr, "cua-relay: give --tls-cert/--tls-key or --tls-self-signed, not both")
		return 2
	case !*selfSigned && *certFile == "" && !*insecure:
		fmt.Fprintln(stderr, "cua-relay: give --tls-cert and --tls-key, or --tls-self-signed (or --insecure-no-tls behind a TLS proxy)")
		return 2
	}
	for _, u := range urls {
		if !strings.HasPrefix(u, "wss://") && !strings.HasPrefix(u, "ws://") {
			fmt.Fprintf(stderr, "cua-relay: --public-url %q: want wss://HOST[:PORT]\n", u)
			return 2
		}
	}
	turnOpts, err := turnOptions(*turnListen, *turnTLSListen, *turnIP, *turnHost, *turnPorts)
	if err != nil {
		fmt.Fprintf(stderr, "cua-relay: %v\n", err)
		return 2
	}
	cluster, err := cf.options()
	if err != nil {
		fmt.Fprintf(stderr, "cua-relay: %v\n", err)
		return 2
	}
	if turnOpts != nil && turnOpts.TLSAddr != "" && *insecure && !*selfSigned && *certFile == "" {
		fmt.Fprintln(stderr, "cua-relay: --turn-tls-listen needs the relay's certificate (--tls-cert/--tls-key or --tls-self-signed)")
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "cua-relay: --log-level %q: %v\n", *logLevel, err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	if os.Getenv("GOGC") == "" {
		// A relay's heap is mostly idle sessions that live long: collecting
		// at +50% rather than +100% keeps RSS near what they need (about 60
		// rather than 80 KiB per attached computer) for little CPU.
		debug.SetGCPercent(50)
	}
	if err := os.MkdirAll(*dataDir, 0o700); err != nil {
		fmt.Fprintf(stderr, "cua-relay: %v\n", err)
		return 1
	}
	var tlsConfig *tls.Config
	switch {
	case *certFile != "":
		cert, fp, err := relayd.LoadCert(*certFile, *keyFile)
		if err != nil {
			fmt.Fprintf(stderr, "cua-relay: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "cua-relay: TLS certificate %s (%s)\n", fp, *certFile)
		tlsConfig = relayd.TLSConfig(cert)
	case *selfSigned:
		cert, fp, made, err := relayd.SelfSigned(*dataDir, certHosts(*listen, urls))
		if err != nil {
			fmt.Fprintf(stderr, "cua-relay: %v\n", err)
			return 1
		}
		how := "reused"
		if made {
			how = "made"
		}
		fmt.Fprintf(stdout, "cua-relay: TLS self-signed certificate %s (%s, in %s)\n", fp, how, filepath.Join(*dataDir, relayd.SelfSignedDir))
		tlsConfig = relayd.TLSConfig(cert)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "cua-relay: listen %s: %v\n", *listen, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// SIGUSR1 drains (SIGTERM stays the full stop; SIGHUP means reload
	// by custom and comes when a terminal goes; SIGQUIT dumps Go's
	// stacks). Asked for before Start: its default action is to exit.
	drainSig := make(chan os.Signal, 1)
	signal.Notify(drainSig, syscall.SIGUSR1)
	defer signal.Stop(drainSig)
	r, err := relayd.Start(ctx, ln, relayd.Options{DataDir: *dataDir, Node: *node, URLs: urls, TLS: tlsConfig, Logger: log, Version: version, TURN: turnOpts,
		Limits: relayd.Limits{Recheck: *recheck}, Cluster: cluster})
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "cua-relay: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "cua-relay: serving on %s (%s)\n", ln.Addr(), strings.Join(r.URLs, ", "))
	if t := r.TURN; t != nil {
		var on []string
		for _, l := range []struct {
			name string
			addr net.Addr
		}{{"udp", t.UDPAddr()}, {"tcp", t.TCPAddr()}, {"tls", t.TLSAddr()}} {
			if l.addr != nil {
				on = append(on, l.name+" "+l.addr.String())
			}
		}
		fmt.Fprintf(stdout, "cua-relay: TURN on %s (relayed address %s)\n", strings.Join(on, ", "), t.RelayIP())
	} else {
		fmt.Fprintln(stdout, "cua-relay: TURN off")
	}
	log.Info("cua-relay serving", "addr", ln.Addr().String(), "version", version, "tls", tlsConfig != nil, "urls", r.URLs)
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-drainSig:
			log.Info("SIGUSR1: draining", "retry_after", relayd.DefaultDrainRetryAfter, "grace", relayd.DefaultDrainGrace)
			// In the background: a SIGTERM meanwhile still stops the node
			// (the drain's report is logged by the server).
			go func() { _, _ = r.Server.Drain(relayd.DefaultDrainRetryAfter, relayd.DefaultDrainGrace) }()
		}
	}
	log.Info("cua-relay shutting down")
	if err := r.Close(); err != nil {
		log.Error("close", "err", err)
		return 1
	}
	return 0
}

// turnOptions are the TURN server's settings from serve's flags; nil when
// --turn-listen is "off" and there is no --turn-tls-listen.
func turnOptions(listen, tlsListen, ip, host, ports string) (*turnsvc.Options, error) {
	if listen == "off" {
		listen = ""
	}
	if tlsListen == "off" {
		tlsListen = ""
	}
	if listen == "" && tlsListen == "" {
		return nil, nil
	}
	for _, a := range []string{listen, tlsListen} {
		if a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("TURN listen address %q: want HOST:PORT or :PORT", a)
		}
	}
	o := &turnsvc.Options{UDPAddr: listen, TCPAddr: listen, TLSAddr: tlsListen, Host: host}
	if ip != "" {
		if o.RelayIP = net.ParseIP(ip); o.RelayIP == nil || o.RelayIP.To4() == nil || o.RelayIP.IsUnspecified() {
			return nil, fmt.Errorf("--turn-ip %q: want an IPv4 address", ip)
		}
	}
	if ports != "" {
		los, his, ok := strings.Cut(ports, "-")
		lo, err1 := strconv.Atoi(los)
		hi, err2 := strconv.Atoi(his)
		if !ok || err1 != nil || err2 != nil || lo < 1024 || hi > 65535 || lo > hi {
			return nil, fmt.Errorf("--turn-relay-ports %q: want LO-HI, 1024 <= LO <= HI <= 65535", ports)
		}
		o.RelayPortMin, o.RelayPortMax = lo, hi
	}
	return o, nil
}

// metrics prints the running relay's metrics.
func metrics(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("metrics", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", os.Getenv(dataDirEnv), "the data dir of the running relay")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dataDir == "" || fs.NArg() != 0 {
		fmt.Fprintf(stderr, "cua-relay: usage: metrics --data-dir DIR (or $%s)\n", dataDirEnv)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	text, err := relayd.NewAdminClient(*dataDir).Metrics(ctx)
	if err != nil {
		e := api.AsError(err)
		fmt.Fprintf(stderr, "cua-relay: %s: %s\n", e.Kind, e.Message)
		return 1
	}
	_, _ = io.WriteString(stdout, text)
	return 0
}

// certHosts are the names a self-signed certificate is made for: the
// listen host and the public URLs' hosts.
func certHosts(listen string, urls []string) []string {
	var out []string
	if h, _, err := net.SplitHostPort(listen); err == nil && h != "" {
		out = append(out, h)
	}
	for _, u := range urls {
		hp := strings.TrimPrefix(strings.TrimPrefix(u, "wss://"), "ws://")
		hp, _, _ = strings.Cut(hp, "/")
		if h, _, err := net.SplitHostPort(hp); err == nil {
			hp = h
		}
		out = append(out, strings.Trim(hp, "[]"))
	}
	return out
}

// admin is the commands that call the running relay's admin socket.
func admin(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) int {
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet(cmd+" "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", os.Getenv(dataDirEnv), "the data dir of the running relay")
	email := fs.String("email", "", "the user's email (user add)")
	asJSON := fs.Bool("json", false, "print JSON")
	// Flags may come before or after the one positional argument.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if *dataDir == "" {
		fmt.Fprintf(stderr, "cua-relay: give --data-dir (or $%s): it names which relay\n", dataDirEnv)
		return 2
	}
	// "team member add|rm TEAM USER": the verb is the first positional.
	if cmd == "team" && sub == "member" && len(pos) > 0 {
		sub, pos = sub+" "+pos[0], pos[1:]
	}
	want := map[string]int{"user add": 1, "user ls": 0, "user rm": 1, "token create": 1, "computer ls": 0,
		"team add": 1, "team ls": 0, "team member add": 2, "team member rm": 2}
	n, ok := want[cmd+" "+sub]
	if !ok {
		fmt.Fprintf(stderr, "cua-relay: unknown command %q\n%s\n", strings.TrimSpace(cmd+" "+sub), usage)
		return 2
	}
	if len(pos) != n {
		fmt.Fprintf(stderr, "cua-relay %s %s: want %d argument(s), got %d\n", cmd, sub, n, len(pos))
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := relayd.NewAdminClient(*dataDir)
	var out any
	var err error
	switch cmd + " " + sub {
	case "user add":
		out, err = c.CreateUser(ctx, pos[0], *email)
		if err == nil && !*asJSON {
			fmt.Fprintf(stdout, "user %s added; make an API token with: cua-relay token create %s\n", pos[0], pos[0])
			return 0
		}
	case "user ls":
		users, e := c.Users(ctx)
		out, err = users, e
		if err == nil && !*asJSON {
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tEMAIL\tID\tCREATED")
			for _, u := range users {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Name, u.Email, u.ID, time.UnixMilli(u.CreatedMS).UTC().Format(time.RFC3339))
			}
			tw.Flush()
			return 0
		}
	case "user rm":
		err = c.DeleteUser(ctx, pos[0])
		if err == nil && !*asJSON {
			fmt.Fprintf(stdout, "user %s removed, with their tokens and computers\n", pos[0])
			return 0
		}
		out = map[string]bool{"deleted": err == nil}
	case "token create":
		tok, e := c.CreateToken(ctx, pos[0])
		out, err = map[string]string{"user": pos[0], "token": tok}, e
		if err == nil && !*asJSON {
			// The token alone on stdout, for a pipe into a file; it is
			// not kept anywhere else.
			fmt.Fprintln(stdout, tok)
			fmt.Fprintf(stderr, "cua-relay: the API token of %s is shown this once; keep it (cua-bridge relay login --token-file)\n", pos[0])
			return 0
		}
	case "team add":
		out, err = c.CreateTeam(ctx, pos[0])
		if err == nil && !*asJSON {
			fmt.Fprintf(stdout, "team %s added; add users with: cua-relay team member add %s USER\n", pos[0], pos[0])
			return 0
		}
	case "team ls":
		teams, e := c.Teams(ctx)
		out, err = teams, e
		if err == nil && !*asJSON {
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TEAM\tMEMBERS")
			for _, t := range teams {
				fmt.Fprintf(tw, "%s\t%s\n", t.ID, strings.Join(t.Members, ","))
			}
			tw.Flush()
			return 0
		}
	case "team member add", "team member rm":
		if strings.HasSuffix(sub, "add") {
			out, err = c.AddTeamMember(ctx, pos[0], pos[1])
		} else {
			out, err = c.RemoveTeamMember(ctx, pos[0], pos[1])
		}
		if err == nil && !*asJSON {
			fmt.Fprintf(stdout, "team %s: %s\n", pos[0], strings.Join(out.(relayapi.Team).Members, ","))
			return 0
		}
	case "computer ls":
		cs, e := c.Computers(ctx)
		out, err = cs, e
		if err == nil && !*asJSON {
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tOWNER\tONLINE\tNODE\tDAEMON")
			for _, c := range cs {
				fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\n", c.Name, c.Owner, c.Online, c.Node, c.DaemonVersion)
			}
			tw.Flush()
			return 0
		}
	}
	if err != nil {
		e := api.AsError(err)
		fmt.Fprintf(stderr, "cua-relay: %s: %s\n", e.Kind, e.Message)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil && !errors.Is(err, io.ErrClosedPipe) {
		return 1
	}
	return 0
}
