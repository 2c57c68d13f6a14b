package desktop

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
)

// Held is input that stays down between calls, for a live viewer whose
// user holds a button through a drag or a modifier through a click: each
// call presses or releases one button or key, and Close releases whatever
// is still down, so a viewer that goes away leaves no key stuck. The
// one-shot calls (Click, Key, ...) release everything they press and
// remain the way for agents.
type Held struct {
	d    *Desktop
	sc   *scope // set for a WindowInput's: confined to its window
	mu   sync.Mutex
	keys []xproto.Keycode
	btns []byte
}

// NewHeld starts a set of held input for one viewer.
func (d *Desktop) NewHeld() *Held { return &Held{d: d} }

// Button presses (down) or releases a button at (x, y), read as in the
// one-shot calls (p's scale and window).
func (h *Held) Button(ctx context.Context, button string, down bool, p api.Pointer, x, y float64) (api.InputResult, error) {
	b, ok := buttons[button]
	if !ok {
		return api.InputResult{}, api.Errorf(api.KindInvalidArgument, "button %q: want left, middle or right", button)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s, err := h.d.begin(ctx, h.sc)
	if err != nil {
		return api.InputResult{}, err
	}
	defer s.end()
	sx, sy, err := s.point(ctx, p, x, y)
	if err != nil {
		if down || !isDropped(err) || !slices.Contains(h.btns, b) {
			return api.InputResult{}, err
		}
		// The release of a button this viewer holds goes out where the
		// pointer is: it reaches the window that took the press (X's
		// implicit grab), and a button left down would stay down.
	} else {
		s.move(sx, sy)
	}
	if down {
		s.fake(evButtonPress, b, 0, 0)
		h.btns = append(h.btns, b) // before the flush: Close releases it even if the answer never comes
	} else {
		s.fake(evButtonRelease, b, 0, 0)
		h.btns = removeLast(h.btns, b)
	}
	if button == "" {
		button = api.ButtonLeft
	}
	return api.InputResult{X: sx, Y: sy, Button: button}, s.flush(ctx)
}

// Key presses (down) or releases one key, named as in Key but without
// modifiers: a viewer holds a modifier as a key of its own.
func (h *Held) Key(ctx context.Context, key string, down bool) (api.InputResult, error) {
	combo, err := ParseKeyCombo(key)
	if err != nil {
		return api.InputResult{}, err
	}
	if len(combo.Mods) > 0 {
		return api.InputResult{}, api.Errorf(api.KindInvalidArgument, "key %q: a held key is one key; hold a modifier as a key of its own", key)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.d.withKeyboard(ctx, h.sc, func(s *session, k *keyboard, call uint64) (api.InputResult, error) {
		kc, _, err := k.bind(ctx, s, xproto.Keysym(combo.Key), call)
		if err != nil {
			return api.InputResult{}, err
		}
		if down {
			s.fake(evKeyPress, byte(kc), 0, 0)
			h.keys = append(h.keys, kc)
		} else {
			// A key held under another binding is released where it was
			// pressed.
			if i := slices.Index(h.keys, kc); i < 0 && len(h.keys) > 0 {
				kc = h.keys[len(h.keys)-1]
			}
			if h.sc != nil && !slices.Contains(h.keys, kc) {
				// Confined: a key this viewer does not hold (its press
				// was refused) is not released into another window.
				return api.InputResult{Key: key}, nil
			}
			s.fake(evKeyRelease, byte(kc), 0, 0)
			h.keys = removeLast(h.keys, kc)
		}
		err = s.flush(ctx)
		if down && (isDropped(err) || api.KindOf(err) == api.KindNotFound) {
			h.keys = removeLast(h.keys, kc)
			if errors.Is(err, errFocusMoved) {
				// The press went out as the focus moved: undone at once,
				// so that the key does not stay down where it landed.
				s.fake(evKeyRelease, byte(kc), 0, 0)
				_ = s.flush(ctx)
			}
		}
		return api.InputResult{Key: key}, err
	})
}

// Close releases every button and key still held.
func (h *Held) Close(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.keys) == 0 && len(h.btns) == 0 {
		return nil
	}
	s, err := h.d.begin(ctx, nil) // releases go wherever the keys went
	if err != nil {
		return err
	}
	defer s.end()
	for _, kc := range slices.Backward(h.keys) {
		s.fake(evKeyRelease, byte(kc), 0, 0)
	}
	for _, b := range slices.Backward(h.btns) {
		s.fake(evButtonRelease, b, 0, 0)
	}
	h.keys, h.btns = nil, nil
	return s.flush(ctx)
}

func removeLast[T comparable](s []T, v T) []T {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == v {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

// ScreenSize is the size of the screen now, in pixels.
func (d *Desktop) ScreenSize(ctx context.Context) (api.Size, error) {
	x, err := d.use(ctx, api.FeatureScreenshot)
	if err != nil {
		return api.Size{}, err
	}
	w, h, err := x.screenSize(ctx)
	return api.Size{Width: w, Height: h}, err
}

// RootProperty reads a string property of the screen's root window ("":
// none), at most maxBytes of it: what another client published for the
// desktop's session (AT-SPI's AT_SPI_BUS), read with the daemon's own
// connection and cookie.
func (d *Desktop) RootProperty(ctx context.Context, name string, maxBytes int) (string, error) {
	x, err := d.use(ctx, api.FeatureScreenshot)
	if err != nil {
		return "", err
	}
	atom, err := x.atom(ctx, name)
	if err != nil {
		return "", err
	}
	p, err := await(ctx, x, "read the root window's "+name, func() (*xproto.GetPropertyReply, error) {
		return xproto.GetProperty(x.c, false, x.root, atom, xproto.GetPropertyTypeAny, 0, uint32(maxBytes+3)/4).Reply()
	})
	if err != nil {
		return "", err
	}
	return string(p.Value[:min(len(p.Value), maxBytes)]), nil
}
