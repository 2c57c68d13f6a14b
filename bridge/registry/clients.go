package registry

import (
	"os"
	"sync"

	"github.com/trycua/cua-spacesd/api/client"
)

// maxLooseClients bounds the clients kept for entries the registry does not
// hold (yet): a Space probed before it is added, or reached as
// direct:<host:port> without being registered. The least recently used goes
// first; an agent naming many addresses cannot grow the cache without end.
const maxLooseClients = 8

// clients keeps one client per Space, so that calls to it share one
// connection pool (and, over TLS, one handshake) instead of building a
// transport each. A client is keyed by everything that makes it, so an
// entry that changed (a token rotated by adding the Space again, another
// URL, CA file or pin, or the CA file's content) gets a new client, and the
// old one's idle connections are closed. The factory is fixed for the
// registry's life, so the dialer it picks is a function of the entry alone
// and part of the key through it.
//
// Each read of the registry's files brings the cache in line with them
// (sync): a client of a Space that was removed or changed, here or by
// another process, is dropped then.
type clients struct {
	build ClientFactory

	mu    sync.Mutex
	items map[clientKey]*cachedClient
	// current is the registry as last read: name to entry, token included.
	current map[string]Entry
	// relay is the relay login as last read (nil: none): the entries of
	// its computers are current while it stays the same.
	relay *RelayLogin
	clock uint64 // orders the uses of loose clients
}

// clientKey is everything a client is made of.
type clientKey struct {
	e  Entry // every field, token included
	ca caStamp
}

// caStamp tells a CA file rewritten in place from the one the client read.
// Size and modification time, not the content: a stat is cheap enough for
// every call, and a rewrite changes the time.
type caStamp struct {
	size, mtime int64
	missing     bool
}

type cachedClient struct {
	c *client.Client
	// registered: built for (or since used as) the entry the registry
	// holds under its name. Such a client is dropped once the registry no
	// longer holds that entry; the others are loose, bounded by count.
	registered bool
	used       uint64
}

func newClients(build ClientFactory) *clients {
	return &clients{build: build, items: map[clientKey]*cachedClient{}, current: map[string]Entry{}}
}

func keyOf(e Entry) clientKey {
	k := clientKey{e: e}
	if e.CAFile != "" {
		if fi, err := os.Stat(e.CAFile); err == nil {
			k.ca = caStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
		} else {
			k.ca.missing = true // the build then fails and says why
		}
	}
	return k
}

// get returns the client of e, building it on first use. The factory runs
// under the lock: it only assembles a client (reading a CA file at most)
// and never dials, and one build per key is what the cache is for.
func (cs *clients) get(e Entry) (*client.Client, error) {
	k := keyOf(e)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.clock++
	registered := cs.isCurrent(e)
	if it, ok := cs.items[k]; ok {
		it.used = cs.clock
		if registered && !it.registered {
			// A probed Space that has since been added.
			it.registered = true
			cs.dropStaleLocked(k)
		}
		return it.c, nil
	}
	c, err := cs.build(e)
	if err != nil {
		return nil, err
	}
	cs.items[k] = &cachedClient{c: c, registered: registered, used: cs.clock}
	if registered {
		cs.dropStaleLocked(k)
	} else {
		cs.boundLooseLocked()
	}
	return c, nil
}

func (cs *clients) isCurrent(e Entry) bool {
	if e.Relay != "" {
		return cs.relay != nil && e == relayEntry(*cs.relay, e.Relay)
	}
	cur, ok := cs.current[e.Name]
	return ok && cur == e
}

// dropStaleLocked drops the other registered clients of k's name: the same
// entry with a CA file since rewritten.
func (cs *clients) dropStaleLocked(k clientKey) {
	for ok, it := range cs.items {
		if ok != k && it.registered && ok.e.Name == k.e.Name {
			cs.dropLocked(ok, it)
		}
	}
}

// boundLooseLocked drops the least recently used loose clients beyond
// maxLooseClients.
func (cs *clients) boundLooseLocked() {
	for {
		n := 0
		var oldest clientKey
		var oldestIt *cachedClient
		for k, it := range cs.items {
			if it.registered {
				continue
			}
			n++
			if oldestIt == nil || it.used < oldestIt.used {
				oldest, oldestIt = k, it
			}
		}
		if n <= maxLooseClients {
			return
		}
		cs.dropLocked(oldest, oldestIt)
	}
}

func (cs *clients) dropLocked(k clientKey, it *cachedClient) {
	delete(cs.items, k)
	// Calls in flight on it finish; its idle connections go now, not after
	// the transport's idle timeout.
	it.c.CloseIdleConnections()
}

// sync records the registry as just read (s with the tokens of t) and drops
// the clients of Spaces it no longer holds as they were: removed, or added
// again with another token, URL or trust. It runs under the registry's
// file lock, so the syncs of one process are in the order of the changes.
func (cs *clients) sync(s *spacesDoc, t *tokensDoc) {
	cur := make(map[string]Entry, len(s.Spaces))
	for _, e := range s.Spaces {
		e.Token = t.Tokens[e.Name]
		cur[e.Name] = e
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.current = cur
	for k, it := range cs.items {
		if it.registered && !cs.isCurrent(k.e) {
			cs.dropLocked(k, it)
		}
	}
}

// syncRelay records the relay login as just read, and drops the clients of
// relay computers reached through another login (a logout, another relay,
// token or trust).
func (cs *clients) syncRelay(l *RelayLogin) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if l != nil {
		c := *l
		l = &c
	}
	cs.relay = l
	for k, it := range cs.items {
		if k.e.Relay != "" && it.registered && !cs.isCurrent(k.e) {
			cs.dropLocked(k, it)
		}
	}
}

// closeAll drops every client.
func (cs *clients) closeAll() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for k, it := range cs.items {
		cs.dropLocked(k, it)
	}
}
