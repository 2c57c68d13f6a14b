package store

import (
	"crypto/tls"

	"github.com/nats-io/nats.go"
)

// ClusterOptions make the embedded nats-server one node of a cluster: it
// listens for routes from the other nodes (still no client port a program
// could use) and JetStream is clustered, its buckets and the audit stream
// replicated on up to three nodes.
type ClusterOptions struct {
	// Name is the cluster's name, the same on every node.
	Name string
	// Listen is host:port of this node's route listener.
	Listen string
	// Routes are nats://host:port of the other nodes' route listeners
	// (this node's own may be in the list: it is skipped).
	Routes []string
	// Key is the mesh key, the same on every node: a route that does not
	// present it is refused, so nothing but the relay's nodes joins.
	Key []byte
	// TLS secures the routes (nil: plain TCP, for a private network or
	// loopback). It must verify the other nodes' certificates.
	TLS *tls.Config
}

// Conn is the store's in-process connection to the embedded server. In a
// cluster it reaches every node's subscribers through the routes: the
// relay's node-to-node messages travel on it. The caller must not close it.
func (s *Store) Conn() *nats.Conn { return s.nc }

// Node is this relay node's name (the NATS server name, unique per node
// in a cluster).
func (s *Store) Node() string { return s.node }
