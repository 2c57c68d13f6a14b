package compatsvc

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/trycua/cua-spacesd/api"
)

// windowID is an X window id as the clients send it: a number, or a string
// holding one in decimal or 0x-hex (the form xprop and wmctrl print).
type windowID uint32

func (w *windowID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	var n float64
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		s = strings.TrimSpace(s)
		u, err := strconv.ParseUint(s, 0, 32)
		if err != nil {
			return api.Errorf(api.KindInvalidArgument, "parameter window_id: %.40q is not a window id (a number, or 0x-hex)", s)
		}
		n = float64(u)
	} else if err := json.Unmarshal(b, &n); err != nil {
		return api.Errorf(api.KindInvalidArgument, "parameter window_id: want a number or a string holding one, got %s", jsonKind(b))
	}
	if n != math.Trunc(n) || n < 1 || n > math.MaxUint32 {
		return api.Errorf(api.KindInvalidArgument, "parameter window_id: %v is not a window id (a whole number from 1 to %d)", n, uint32(math.MaxUint32))
	}
	*w = windowID(n)
	return nil
}

// point is an optional x, y pair of a pointer command.
type point struct {
	X *float64 `json:"x"`
	Y *float64 `json:"y"`
}

// given reports whether the point names a place: both coordinates, or
// neither (then the pointer's place is meant). One without the other is
// refused rather than guessed.
func (p point) given() (bool, error) {
	switch {
	case p.X != nil && p.Y != nil:
		return true, nil
	case p.X == nil && p.Y == nil:
		return false, nil
	}
	return false, api.Errorf(api.KindInvalidArgument, "give both x and y, or neither to use the pointer's place")
}

// seconds reads a duration parameter in seconds, bounded.
func seconds(name string, v *float64, def, max float64) (float64, error) {
	if v == nil {
		return def, nil
	}
	if math.IsNaN(*v) || *v < 0 || *v > max {
		return 0, api.Errorf(api.KindInvalidArgument, "parameter %s: %v seconds is out of range 0-%v", name, *v, max)
	}
	return *v, nil
}
