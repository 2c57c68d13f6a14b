package store

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trycua/cua-spacesd/api"
)

// A cluster node's setup, once JetStream has a quorum: make or bind the
// streams, follow three buckets, read or make the grant key and the TURN
// secret. Right after a quorum, under load, a request may reach a stream
// still electing its leader (JetStream never answers it), or a leader
// just elected that has not applied what it committed (a key written a
// moment ago reads as not found). So every step is a series of tries,
// each bounded by clusterTry, until it succeeds or the setup's budget
// (clusterSetupBudget, from the quorum on) is spent: then the start fails
// saying which step, after how long, and its last error.

const (
	// clusterTry bounds one try of a setup step: a few requests that take
	// milliseconds, unless one was sent to a stream without a leader.
	clusterTry = 2 * time.Second
	// clusterSetupBudget bounds a cluster node's setup once it has a
	// quorum (docs/operations.md, Starting). A node bringing a single
	// node's data in keeps the others waiting past it (see importWait).
	clusterSetupBudget = 2 * time.Minute
	// tryPause is the pause between two tries.
	tryPause = 200 * time.Millisecond
)

// permanent marks a setup step's error that another try cannot mend.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// importWait is a try's answer while another node imports a single
// node's data: the wait goes on (the import may take minutes), the budget
// counted from the last such answer.
type importWait struct{ node string }

func (w importWait) Error() string {
	return "node " + w.node + " is bringing a single node's data into the cluster"
}

// try runs a setup step: once, bounded by opTimeout, on a single node; in
// a cluster, in tries (see above) until s.setupUntil.
func (s *Store) try(ctx context.Context, what string, step func(context.Context) error) error {
	return s.tryEach(ctx, what, clusterTry, step)
}

// tryEach is try with each try bounded by per (a step that reads a whole
// bucket needs more than clusterTry on a big one).
func (s *Store) tryEach(ctx context.Context, what string, per time.Duration, step func(context.Context) error) error {
	if s.cluster == nil {
		octx, cancel := opContext(ctx)
		defer cancel()
		err := step(octx)
		if p, ok := err.(permanent); ok {
			return p.error
		}
		return err
	}
	start, said := time.Now(), time.Now()
	for tries := 1; ; tries++ {
		tctx, cancel := context.WithTimeout(ctx, per)
		err := step(tctx)
		cancel()
		if err == nil {
			return nil
		}
		var p permanent
		if errors.As(err, &p) {
			return p.error
		}
		var w importWait
		if errors.As(err, &w) {
			s.setupUntil = time.Now().Add(clusterSetupBudget)
			if time.Since(said) >= quorumLogEvery {
				s.log.Info("relay cluster: waiting for a node to bring its data (and the relay's keys) into the cluster", "node", w.node)
				said = time.Now()
			}
		}
		if ctx.Err() != nil {
			return api.Errorf(api.KindEnv, "relay cluster: %s: %w (last try: %v)", what, ctx.Err(), err)
		}
		if time.Now().After(s.setupUntil) {
			return api.Errorf(api.KindTimeout, "relay cluster: %s: not done after %d tries in %s, with a quorum of nodes (each node's setup gets %s from the quorum on): %w",
				what, tries, time.Since(start).Round(time.Millisecond), clusterSetupBudget, err)
		}
		s.log.Debug("relay cluster: setup step not done yet", "step", what, "try", tries, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(tryPause):
		}
	}
}

// loadSecret reads the random value of key in the meta bucket, or makes it
// on the first start. Create (not Put) makes the first writer win: two
// nodes starting at once end up with one value (one grant key, which every
// Space pins; one TURN secret, which every node checks credentials with).
// A Create that failed or whose answer was lost is tried again from the
// read: the value is written at most once whatever happened to it.
func (s *Store) loadSecret(ctx context.Context, key, what string, size int) ([]byte, error) {
	var v []byte
	err := s.try(ctx, "read "+what, func(ctx context.Context) error {
		e, err := s.meta.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) && s.cluster != nil {
			// A node may be bringing a single node's data, these secrets
			// included, into the cluster: wait for them, never make others.
			if node, pending, perr := s.importPending(ctx); perr != nil {
				return perr
			} else if pending {
				return importWait{node}
			}
		}
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			b := make([]byte, size)
			rand.Read(b)
			if _, err := s.meta.Create(ctx, key, b); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
				return api.Errorf(api.KindEnv, "relay store: save %s: %w", what, err)
			}
			// Written, by this node or another: a read that still misses
			// it reached a leader that has not applied it yet (next try).
			e, err = s.meta.Get(ctx, key)
		}
		if err != nil {
			return api.Errorf(api.KindEnv, "relay store: read %s: %w", what, err)
		}
		if len(e.Value()) != size {
			return permanent{api.Errorf(api.KindEnv, "relay store: %s is %d bytes, want %d: the data dir is damaged", what, len(e.Value()), size)}
		}
		v = e.Value()
		return nil
	})
	return v, err
}
