package compatsvc

import (
	"context"
	"slices"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// The keyboard commands map onto capabilities/desktop: any Unicode text
// is typed (characters without a key are bound for the time of their
// stroke), and key names map as keys.go says.

type typeParams struct {
	Text string `json:"text"`
}

func typeText(ctx context.Context, c *conn, p typeParams) (any, error) {
	if p.Text == "" {
		return nil, nil
	}
	_, err := c.svc.desk.Type(ctx, p.Text)
	return nil, err
}

type keyParams struct {
	Key string `json:"key"`
}

func pressKey(ctx context.Context, c *conn, p keyParams) (any, error) {
	k, err := keyName(p.Key)
	if err != nil {
		return nil, err
	}
	_, err = c.svc.desk.Key(ctx, k)
	return nil, err
}

type hotkeyParams struct {
	Keys []string `json:"keys"`
}

// maxHotkeyKeys bounds the keys of one hotkey.
const maxHotkeyKeys = 16

// hotkey presses the keys in order and releases them in reverse. Modifiers
// then one key is one call of the desktop (which releases everything it
// pressed whatever happens); any other sequence (pyautogui also takes
// hotkey('a', 'b')) is held key by key on a set of its own.
func hotkey(ctx context.Context, c *conn, p hotkeyParams) (any, error) {
	if len(p.Keys) == 0 || len(p.Keys) > maxHotkeyKeys {
		return nil, api.Errorf(api.KindInvalidArgument, "keys holds %d keys; give 1 to %d", len(p.Keys), maxHotkeyKeys)
	}
	names := make([]string, len(p.Keys))
	for i, k := range p.Keys {
		n, err := keyName(k)
		if err != nil {
			return nil, err
		}
		names[i] = n
	}
	mods := names[:len(names)-1]
	if !slices.ContainsFunc(mods, func(n string) bool { return !modifierNames[n] }) && !hasDuplicate(mods) {
		_, err := c.svc.desk.Key(ctx, strings.Join(names, "+"))
		return nil, err
	}
	h := c.svc.desk.NewHeld()
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), heldReleaseTimeout)
		defer cancel()
		_ = h.Close(rctx)
	}()
	for _, n := range names {
		if _, err := h.Key(ctx, n, true); err != nil {
			return nil, err
		}
	}
	for _, n := range slices.Backward(names) {
		if _, err := h.Key(ctx, n, false); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func hasDuplicate(names []string) bool {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return true
		}
		seen[n] = true
	}
	return false
}

// keyHold presses (down) or releases one key and keeps it so on the
// client's conn, until key_up or until the client goes away.
func keyHold(down bool) func(context.Context, *conn, keyParams) (any, error) {
	return func(ctx context.Context, c *conn, p keyParams) (any, error) {
		k, err := keyName(p.Key)
		if err != nil {
			return nil, err
		}
		_, err = c.held.Key(ctx, k, down)
		return nil, err
	}
}
