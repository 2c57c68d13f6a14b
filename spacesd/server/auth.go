package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// TokenPollInterval is how often a token file is re-read for rotation.
const TokenPollInterval = time.Second

// ErrTokenRotated is the cause (context.Cause) of the context of every
// request and stream that a token rotation ended, so that whoever reports
// the end can say why instead of "the caller went away".
var ErrTokenRotated = errors.New("the token was rotated: requests and streams of the old token end; call again with the new token")

// Auth holds the current bearer token and ends every session opened under a
// token once that token is rotated away.
type Auth struct {
	mu       sync.Mutex
	digest   [sha256.Size]byte // of the current token; the token itself is not kept
	hasToken bool
	// generation counts the rotations of this process: a session belongs
	// to one generation and ends when it is rotated away.
	generation uint64
	// epoch names the current token's installation, and is what a ticket
	// carries (see Ticket.Epoch). Unlike generation it survives a restart
	// of the daemon: a token file's comes from its change time and inode,
	// which a rotation (even back to the same token) changes and a
	// restart does not.
	epoch int64
	// retired are the ticket keys of the tokens rotated away in this
	// process, newest first (at most maxRetiredTicketKeys): a ticket they
	// sign is refused as one of an old token, not as a forgery.
	retired   [][]byte
	sessions  map[*session]struct{}
	file      string
	fileStamp string
	log       *slog.Logger
}

type session struct {
	generation uint64
	cancel     context.CancelCauseFunc
}

// NewAuth returns an Auth for a fixed token ("" means no auth: loopback only).
// Its epoch is 0: a fixed token cannot be rotated but by Rotate, so a
// daemon restarted with the same token accepts the tickets it minted.
func NewAuth(token string, log *slog.Logger) *Auth {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Auth{sessions: map[*session]struct{}{}, log: log}
	a.set(token)
	return a
}

// NewFileAuth returns an Auth that reads the token from a file and follows
// its changes (see Watch).
func NewFileAuth(path string, log *slog.Logger) (*Auth, error) {
	tf, err := readTokenFile(path)
	if err != nil {
		return nil, err
	}
	a := NewAuth(tf.token, log)
	a.file, a.fileStamp, a.epoch = path, tf.stamp, tf.epoch
	return a, nil
}

// tokenFile is what one read of a token file found.
type tokenFile struct {
	token string
	// stamp tells a changed token from the same one read again.
	stamp string
	// epoch names the file's installation (see fileEpoch).
	epoch int64
}

// readTokenFile reads a token file: its first line, trimmed, and the
// change time of the same open file, so that the two belong together.
func readTokenFile(path string) (tokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return tokenFile{}, fmt.Errorf("token file %s: %w", path, err)
	}
	defer f.Close()
	epoch, err := fileEpoch(f)
	if err != nil {
		return tokenFile{}, fmt.Errorf("token file %s: %w", path, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFileBytes))
	if err != nil {
		return tokenFile{}, fmt.Errorf("token file %s: %w", path, err)
	}
	tok := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	if tok == "" {
		return tokenFile{}, fmt.Errorf("token file %s is empty", path)
	}
	sum := sha256.Sum256([]byte(tok))
	return tokenFile{token: tok, stamp: string(sum[:]), epoch: epoch}, nil
}

// mixEpoch folds what names a token file's installation into one number.
func mixEpoch(ns int64, dev, ino uint64) int64 {
	h := fnv.New64a()
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(ns))
	binary.LittleEndian.PutUint64(b[8:], dev)
	binary.LittleEndian.PutUint64(b[16:], ino)
	h.Write(b[:])
	return int64(h.Sum64())
}

// maxTokenFileBytes bounds the read of a token file: a token is one short
// line, and a path mistyped to a huge file must not be read whole.
const maxTokenFileBytes = 64 << 10

func (a *Auth) set(token string) {
	a.hasToken = token != ""
	a.digest = sha256.Sum256([]byte(token))
}

// Required reports whether calls need a token.
func (a *Auth) Required() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hasToken
}

// Check compares a presented token with the current one in constant time
// (both sides are hashed first, so the length leaks nothing either) and
// returns the generation it belongs to.
func (a *Auth) Check(presented string) (uint64, bool) {
	sum := sha256.Sum256([]byte(presented))
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.hasToken {
		return a.generation, true
	}
	ok := subtle.ConstantTimeCompare(sum[:], a.digest[:]) == 1
	return a.generation, ok
}

// Session derives a context that is cancelled with cause ErrTokenRotated
// when the token of generation gen is rotated away. The returned end must
// be called when the session ends; its cause (nil: context.Canceled) is the
// context's cause unless the rotation came first.
func (a *Auth) Session(parent context.Context, gen uint64) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	s := &session{generation: gen, cancel: cancel}
	a.mu.Lock()
	if gen != a.generation {
		a.mu.Unlock()
		cancel(ErrTokenRotated)
		return ctx, func(error) {}
	}
	a.sessions[s] = struct{}{}
	a.mu.Unlock()
	return ctx, func(cause error) {
		a.mu.Lock()
		delete(a.sessions, s)
		a.mu.Unlock()
		cancel(cause)
	}
}

// Generation is the current token generation.
func (a *Auth) Generation() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.generation
}

// Valid reports whether generation gen is still the current one.
func (a *Auth) Valid(gen uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return gen == a.generation
}

// Rotate installs a new token and ends every session and ticket of the
// old one. Its epoch is the time of the call: a rotation made here, not
// through the token file, is this process's alone.
func (a *Auth) Rotate(token string) { a.rotate(token, time.Now().UnixNano()) }

func (a *Auth) rotate(token string, epoch int64) {
	a.mu.Lock()
	a.retired = append([][]byte{a.ticketKey()}, a.retired[:min(len(a.retired), maxRetiredTicketKeys-1)]...)
	a.set(token)
	a.generation++
	if epoch == a.epoch {
		// The new epoch must differ from the old one, or the old token's
		// tickets would live on were it put back.
		epoch++
	}
	a.epoch = epoch
	old := a.sessions
	a.sessions = map[*session]struct{}{}
	a.mu.Unlock()
	for s := range old {
		s.cancel(ErrTokenRotated)
	}
	a.log.Info("token rotated; sessions of the old token ended", "sessions", len(old))
}

// Watch follows the token file until ctx ends. Polling (not fsnotify) on
// purpose: editors and secret managers replace the file in many ways (rename,
// symlink swap as Kubernetes does), and a one-second poll sees them all.
func (a *Auth) Watch(ctx context.Context) {
	if a.file == "" {
		return
	}
	t := time.NewTicker(TokenPollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.reload()
		}
	}
}

func (a *Auth) reload() {
	tf, err := readTokenFile(a.file)
	if err != nil {
		// Keep the old token: a half-written or briefly missing file must not
		// open the daemon. The next poll tries again.
		if !errors.Is(err, os.ErrNotExist) {
			a.log.Warn("token file unreadable; keeping the current token", "err", err)
		}
		return
	}
	a.mu.Lock()
	changed := tf.stamp != a.fileStamp
	a.fileStamp = tf.stamp
	a.mu.Unlock()
	if changed {
		a.rotate(tf.token, tf.epoch)
	}
}
