package a11y

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/godbus/dbus/v5"

	"github.com/trycua/cua-spacesd/api"
)

// maxSnapshots is how many trees the ids of an action may come from: an
// id of an older tree answers precondition_failed.
const maxSnapshots = 16

// maxIDBytes bounds an id before it is decoded.
const maxIDBytes = 1024

// errStale is the answer to an id of a forgotten tree or a gone element.
func errStale(what string) error {
	return api.Errorf(api.KindPreconditionFailed, "%s: take the tree again", what).
		WithHint("take the tree (or find the element) again and use the new id")
}

// entry is what a snapshot remembers of one element: its parent and its
// index there, for select.
type entry struct {
	parent ref
	index  int
}

// snapshots are the elements of the last maxSnapshots trees, by
// generation.
type snapshots struct {
	mu    sync.Mutex
	next  uint64
	order []uint64
	sets  map[uint64]map[ref]entry
}

func newSnapshots() *snapshots {
	// A random first generation: an id from an earlier daemon must not
	// name an element of this one's trees.
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &snapshots{next: uint64(binary.BigEndian.Uint32(b[:])) << 16, sets: map[uint64]map[ref]entry{}}
}

// begin answers a new generation.
func (s *snapshots) begin() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	return s.next
}

// commit remembers the elements of generation gen, forgetting the oldest
// tree past maxSnapshots.
func (s *snapshots) commit(gen uint64, set map[ref]entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sets[gen] = set
	s.order = append(s.order, gen)
	for len(s.order) > maxSnapshots {
		delete(s.sets, s.order[0])
		s.order = s.order[1:]
	}
}

func (s *snapshots) lookup(gen uint64, r ref) (entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sets[gen][r]
	return e, ok
}

// encodeID is the opaque id of element r in generation gen.
func encodeID(gen uint64, r ref) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatUint(gen, 36) + "|" + r.Bus + "|" + string(r.Path)))
}

// decodeID parses an id of encodeID.
func decodeID(id string) (uint64, ref, error) {
	if id == "" || len(id) > maxIDBytes {
		return 0, ref{}, errors.New("empty or too long")
	}
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil {
		return 0, ref{}, errors.New("not base64url")
	}
	parts := strings.SplitN(string(b), "|", 3)
	if len(parts) != 3 {
		return 0, ref{}, errors.New("not gen|bus|path")
	}
	gen, err := strconv.ParseUint(parts[0], 36, 64)
	if err != nil {
		return 0, ref{}, errors.New("bad generation")
	}
	r := ref{Bus: parts[1], Path: dbus.ObjectPath(parts[2])}
	if !r.valid() {
		return 0, ref{}, errors.New("bad bus name or object path")
	}
	return gen, r, nil
}
