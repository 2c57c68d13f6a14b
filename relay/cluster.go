package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/relayd"
	"github.com/trycua/cua-spacesd/relay/store"
)

// clusterFlags are serve's flags that make the node one of a cluster.
type clusterFlags struct {
	name, listen, keyFile  *string
	tlsCert, tlsKey, tlsCA *string
	routes                 listFlag
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	c.name = fs.String("cluster", "", "run as one node of the cluster NAME (the same on every node): NATS routes to the others, JetStream replicated (default: a single node)")
	c.listen = fs.String("cluster-listen", ":6222", "with --cluster: HOST:PORT the other nodes' routes reach this node at")
	fs.Var(&c.routes, "routes", "with --cluster: nats://HOST:PORT of the other nodes (repeatable or comma-separated; this node's own may be in the list)")
	c.keyFile = fs.String("cluster-key-file", "", "with --cluster: the mesh key file, the same on every node, mode 600 (cua-relay cluster key > FILE)")
	c.tlsCert = fs.String("cluster-tls-cert", "", "with --cluster: secure the routes with this PEM certificate (presented both ways)")
	c.tlsKey = fs.String("cluster-tls-key", "", "the PEM private key of --cluster-tls-cert")
	c.tlsCA = fs.String("cluster-tls-ca", "", "the PEM CA(s) the other nodes' route certificates are checked against")
}

// options answers the store's cluster settings, nil without --cluster.
func (c *clusterFlags) options() (*store.ClusterOptions, error) {
	if *c.name == "" {
		if len(c.routes) > 0 || *c.keyFile != "" || *c.tlsCert != "" {
			return nil, fmt.Errorf("--routes, --cluster-key-file and --cluster-tls-* need --cluster NAME")
		}
		return nil, nil
	}
	if *c.keyFile == "" {
		return nil, fmt.Errorf("--cluster needs --cluster-key-file (make one with: cua-relay cluster key > FILE; copy it to every node)")
	}
	key, err := store.ReadKeyFile(*c.keyFile)
	if err != nil {
		return nil, err
	}
	o := &store.ClusterOptions{Name: *c.name, Listen: *c.listen, Routes: c.routes, Key: key}
	switch {
	case *c.tlsCert == "" && *c.tlsKey == "" && *c.tlsCA == "":
	case *c.tlsCert == "" || *c.tlsKey == "" || *c.tlsCA == "":
		return nil, fmt.Errorf("give --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca together")
	default:
		if o.TLS, err = routeTLS(*c.tlsCert, *c.tlsKey, *c.tlsCA); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// routeTLS is the routes' TLS: this node's pair, presented both ways, and
// the CA the others' are checked against, both ways.
func routeTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--cluster-tls-cert: %w", err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--cluster-tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--cluster-tls-ca %s: no PEM certificate", caFile)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert}, RootCAs: pool, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	}, nil
}

// clusterCmd is "cua-relay cluster key".
func clusterCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || args[0] != "key" {
		fmt.Fprintln(stderr, "cua-relay: usage: cluster key > FILE   (a new mesh key; chmod 600 FILE, copy it to every node)")
		return 2
	}
	fmt.Fprintln(stdout, store.GenerateKey())
	return 0
}

// printStatus prints the store's part of status: the cluster and each
// stream's replication.
func printStatus(w io.Writer, st relayapi.Status) {
	if st.Cluster == "" {
		fmt.Fprintf(w, "a single node (no cluster)\n\n")
	} else {
		leader := st.MetaLeader
		if leader == "" {
			leader = "NONE (no quorum: the store cannot be written)"
		}
		fmt.Fprintf(w, "cluster %s: %d routes up; JetStream metadata leader: %s\n\n", st.Cluster, st.Routes, leader)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tSTATE")
		for _, n := range st.Nodes {
			fmt.Fprintf(tw, "%s\t%s\n", n.Name, peerState(n, st.MetaLeader))
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM\tREPLICAS\tLEADER\tPEERS\tMESSAGES")
	for _, s := range st.Streams {
		var peers []string
		for _, p := range s.Peers {
			peers = append(peers, p.Name+" ("+peerState(p, "")+")")
		}
		if s.Error != "" {
			fmt.Fprintf(tw, "%s\t?\t-\t(no answer: %s)\t-\n", s.Name, s.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\n", s.Name, s.Replicas, dash(s.Leader), dash(strings.Join(peers, ", ")), s.Messages)
	}
	tw.Flush()
}

func peerState(p relayapi.ClusterPeer, leader string) string {
	switch {
	case p.Name == leader:
		return "leader"
	case p.Offline:
		return "offline"
	case !p.Current:
		return fmt.Sprintf("behind by %d", p.Lag)
	}
	return "current"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// backup has the running relay write a backup of its store.
func backup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", os.Getenv(dataDirEnv), "the data dir of the running relay")
	to := fs.String("to", "", "the backup's directory, new or empty, on the relay's machine")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dataDir == "" || *to == "" || fs.NArg() != 0 {
		fmt.Fprintf(stderr, "cua-relay: usage: backup --to DIR --data-dir DIR (or $%s)\n", dataDirEnv)
		return 2
	}
	dir, err := filepath.Abs(*to)
	if err != nil {
		fmt.Fprintf(stderr, "cua-relay: --to: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	d, err := relayd.NewAdminClient(*dataDir).Backup(ctx, dir)
	if err != nil {
		e := api.AsError(err)
		fmt.Fprintf(stderr, "cua-relay: %s: %s\n", e.Kind, e.Message)
		return 1
	}
	fmt.Fprintf(stdout, "backup in %s: %d keys, %d audit lines (restore: docs/operations.md, Backups)\n", d.Dir, d.Keys, d.AuditLines)
	return 0
}
