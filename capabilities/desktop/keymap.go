package desktop

import (
	"context"
	"sync"
	"time"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
)

const (
	// restoreAfter is how long a temporary keysym binding outlives its last
	// keystroke. A client looks the keysym up when it handles the key event,
	// possibly after reading the map again; restoring the map at once would
	// race slow clients and make them see an empty key.
	restoreAfter = 2 * time.Second
	// rebindPause lets clients handle earlier keystrokes of a spare keycode
	// before it is bound to another keysym within one call.
	rebindPause = 40 * time.Millisecond
)

// keyboard knows the keyboard map and binds keysyms that have no keycode
// to spare (empty) keycodes for a short time.
type keyboard struct {
	x *xconn

	mu    sync.Mutex
	min   xproto.Keycode
	per   int
	syms  []xproto.Keysym
	bound map[xproto.Keycode]binding // our temporary bindings
	timer *time.Timer
	clock uint64
}

type binding struct {
	sym  xproto.Keysym
	used uint64 // clock of the last use, for LRU eviction
	call uint64 // the call that last used it
}

// load reads the current map; called at the start of every key call, so a
// layout changed by someone else is seen.
func (k *keyboard) load(ctx context.Context) error {
	setup := xproto.Setup(k.x.c)
	k.min = setup.MinKeycode
	count := byte(int(setup.MaxKeycode) - int(setup.MinKeycode) + 1)
	r, err := await(ctx, k.x, "read the keyboard map", func() (*xproto.GetKeyboardMappingReply, error) {
		return xproto.GetKeyboardMapping(k.x.c, setup.MinKeycode, count).Reply()
	})
	if err != nil {
		return err
	}
	k.per = int(r.KeysymsPerKeycode)
	k.syms = r.Keysyms
	if k.bound == nil {
		k.bound = map[xproto.Keycode]binding{}
	}
	return nil
}

// find returns a keycode that yields sym at level 0 or 1 (shifted).
func (k *keyboard) find(sym xproto.Keysym) (xproto.Keycode, bool, bool) {
	if k.per == 0 {
		return 0, false, false
	}
	for level := 0; level < 2 && level < k.per; level++ {
		for i := 0; i*k.per < len(k.syms); i++ {
			if k.syms[i*k.per+level] == sym {
				return k.min + xproto.Keycode(i), level == 1, true
			}
		}
	}
	return 0, false, false
}

// spare picks a keycode for a temporary binding: an empty one, else our
// least recently used binding.
func (k *keyboard) spare() (xproto.Keycode, bool) {
	var lru xproto.Keycode
	var lruUsed uint64 = ^uint64(0)
	for i := 0; i*k.per < len(k.syms); i++ {
		kc := k.min + xproto.Keycode(i)
		if b, ok := k.bound[kc]; ok {
			if b.used < lruUsed {
				lru, lruUsed = kc, b.used
			}
			continue
		}
		empty := true
		for _, s := range k.syms[i*k.per : (i+1)*k.per] {
			if s != 0 {
				empty = false
				break
			}
		}
		// Keycode 8 is skipped: some clients treat it specially.
		if empty && kc > 8 {
			return kc, true
		}
	}
	return lru, lruUsed != ^uint64(0)
}

// bind makes sym typeable, binding it to a spare keycode at every level
// (so Shift or Caps Lock cannot change it) when no key yields it.
func (k *keyboard) bind(ctx context.Context, s *session, sym xproto.Keysym, call uint64) (xproto.Keycode, bool, error) {
	if kc, shift, ok := k.find(sym); ok {
		if b, mine := k.bound[kc]; mine {
			b.used, b.call = k.tick(), call
			k.bound[kc] = b
		}
		return kc, shift, nil
	}
	kc, ok := k.spare()
	if !ok {
		return 0, false, api.Errorf(api.KindEnv, "the keyboard map has no spare keycode to bind keysym 0x%x to", sym)
	}
	if b, mine := k.bound[kc]; mine && b.call == call {
		// Earlier keystrokes of this call may still be on their way to
		// the client through this keycode.
		if err := sleepCtx(ctx, rebindPause); err != nil {
			return 0, false, err
		}
	}
	row := make([]xproto.Keysym, k.per)
	for i := range row {
		row[i] = sym
	}
	// The queued keystrokes go first: they may use this keycode's old
	// binding.
	if err := s.flush(ctx); err != nil {
		return 0, false, err
	}
	// Recorded before it is sent, so that restoreAll empties it even when
	// the change lands after the call gave up on it.
	k.bound[kc] = binding{sym: sym, used: k.tick(), call: call}
	err := k.x.do(ctx, "bind a spare keycode", func() error {
		return xerr("bind a spare keycode", xproto.ChangeKeyboardMappingChecked(k.x.c, 1, kc, byte(k.per), row).Check())
	})
	if err != nil {
		return 0, false, err
	}
	i := int(kc - k.min)
	copy(k.syms[i*k.per:(i+1)*k.per], row)
	return kc, false, nil
}

func (k *keyboard) tick() uint64 { k.clock++; return k.clock }

// scheduleRestore restores the map once the bindings went unused for a while.
func (k *keyboard) scheduleRestore() {
	if len(k.bound) == 0 {
		return
	}
	if k.timer != nil {
		k.timer.Stop()
	}
	k.timer = time.AfterFunc(restoreAfter, k.restoreAll)
}

// restoreAll empties every keycode the daemon bound.
func (k *keyboard) restoreAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.timer != nil {
		k.timer.Stop()
		k.timer = nil
	}
	if len(k.bound) == 0 || k.per == 0 {
		return
	}
	empty := make([]xproto.Keysym, k.per)
	kcs := make([]xproto.Keycode, 0, len(k.bound))
	for kc := range k.bound {
		kcs = append(kcs, kc)
		delete(k.bound, kc)
	}
	// No caller's context here (a timer or the close); replyTimeout bounds
	// the exchange, and a display that does not answer loses the restore.
	err := k.x.do(context.Background(), "restore the spare keycodes", func() error {
		for _, kc := range kcs {
			if err := xproto.ChangeKeyboardMappingChecked(k.x.c, 1, kc, byte(k.per), empty).Check(); err != nil {
				k.x.log.Warn("restore a spare keycode", "keycode", kc, "err", err)
			}
		}
		return nil
	})
	if err != nil {
		k.x.log.Warn("restore the spare keycodes", "err", err)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return api.Errorf(api.KindCancelled, "input cancelled: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}
