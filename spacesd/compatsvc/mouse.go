package compatsvc

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// The mouse commands map onto capabilities/desktop's XTEST input, in screen
// pixels (the bus's screenshots are unscaled). A button held with
// mouse_down stays down on the client's conn until mouse_up, or until the
// client goes away.

// Bounds of the pointer commands.
const (
	// maxDragSeconds bounds the duration of a drag.
	maxDragSeconds = 10
	// defaultDragSeconds is computer-server's default duration.
	defaultDragSeconds = 0.5
	// maxDragPoints bounds the points of a drag's path.
	maxDragPoints = 1000
)

// at is where a command with an optional point acts: the point, or the
// pointer's place.
func (c *conn) at(ctx context.Context, p point) (float64, float64, error) {
	given, err := p.given()
	if err != nil || given {
		return deref(p.X), deref(p.Y), err
	}
	cur, err := c.svc.desk.CursorPosition(ctx)
	return float64(cur.X), float64(cur.Y), err
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// button reads a button parameter (default left).
func button(b string) (string, error) {
	switch strings.ToLower(b) {
	case "", api.ButtonLeft:
		return api.ButtonLeft, nil
	case api.ButtonMiddle:
		return api.ButtonMiddle, nil
	case api.ButtonRight:
		return api.ButtonRight, nil
	}
	return "", api.Errorf(api.KindInvalidArgument, "button %.20q: want left, middle or right", b)
}

func clickWith(btn string, count int) func(context.Context, *conn, point) (any, error) {
	return func(ctx context.Context, c *conn, p point) (any, error) {
		x, y, err := c.at(ctx, p)
		if err != nil {
			return nil, err
		}
		_, err = c.svc.desk.Click(ctx, api.ClickRequest{X: x, Y: y, Button: btn, Count: count})
		return nil, err
	}
}

type moveParams struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

func moveCursor(ctx context.Context, c *conn, p moveParams) (any, error) {
	_, err := c.svc.desk.MoveMouse(ctx, api.MouseMoveRequest{X: p.X, Y: p.Y})
	return nil, err
}

type buttonParams struct {
	point
	Button string `json:"button"`
}

// mouseButton presses (down) or releases a button at the point, or where
// the pointer is, and keeps it so on the client's conn.
func mouseButton(down bool) func(context.Context, *conn, buttonParams) (any, error) {
	return func(ctx context.Context, c *conn, p buttonParams) (any, error) {
		btn, err := button(p.Button)
		if err != nil {
			return nil, err
		}
		x, y, err := c.at(ctx, p.point)
		if err != nil {
			return nil, err
		}
		_, err = c.held.Button(ctx, btn, down, api.Pointer{}, x, y)
		return nil, err
	}
}

type dragToParams struct {
	X        float64  `json:"x"`
	Y        float64  `json:"y"`
	Button   string   `json:"button"`
	Duration *float64 `json:"duration"`
}

// dragOptions reads the button and duration that drag and drag_to share.
func dragOptions(name string, duration *float64) (btn string, secs float64, err error) {
	if btn, err = button(name); err != nil {
		return "", 0, err
	}
	secs, err = seconds("duration", duration, defaultDragSeconds, maxDragSeconds)
	return btn, secs, err
}

// dragTo drags from where the pointer is to (x, y).
func dragTo(ctx context.Context, c *conn, p dragToParams) (any, error) {
	btn, secs, err := dragOptions(p.Button, p.Duration)
	if err != nil {
		return nil, err
	}
	from, err := c.svc.desk.CursorPosition(ctx)
	if err != nil {
		return nil, err
	}
	_, err = c.svc.desk.Drag(ctx, api.DragRequest{FromX: float64(from.X), FromY: float64(from.Y), ToX: p.X, ToY: p.Y,
		Button: btn, DurationMS: max(1, int64(secs*1000))})
	return nil, err
}

type dragParams struct {
	Path     [][]float64 `json:"path"`
	Button   string      `json:"button"`
	Duration *float64    `json:"duration"`
}

// drag presses the button at the path's first point, moves through the
// others, spread over the duration, and releases at the last. A failure
// on the way releases the button where the pointer got to.
func drag(ctx context.Context, c *conn, p dragParams) (any, error) {
	btn, secs, err := dragOptions(p.Button, p.Duration)
	if err != nil {
		return nil, err
	}
	switch {
	case len(p.Path) < 2:
		return nil, api.Errorf(api.KindInvalidArgument, "a drag path needs two points at least, got %d", len(p.Path))
	case len(p.Path) > maxDragPoints:
		return nil, api.Errorf(api.KindInvalidArgument, "a drag path of %d points is over the limit of %d", len(p.Path), maxDragPoints)
	}
	for i, pt := range p.Path {
		if len(pt) != 2 || math.IsNaN(pt[0]) || math.IsNaN(pt[1]) {
			return nil, api.Errorf(api.KindInvalidArgument, "path[%d] is not an [x, y] pair", i)
		}
	}
	d := c.svc.desk
	if _, err := c.held.Button(ctx, btn, true, api.Pointer{}, p.Path[0][0], p.Path[0][1]); err != nil {
		return nil, err
	}
	step := time.Duration(secs * float64(time.Second) / float64(len(p.Path)-1))
	last := p.Path[0]
	for _, pt := range p.Path[1:] {
		if err := pause(ctx, step); err != nil {
			c.letGo(btn, last)
			return nil, err
		}
		if _, err := d.MoveMouse(ctx, api.MouseMoveRequest{X: pt[0], Y: pt[1]}); err != nil {
			c.letGo(btn, last)
			return nil, err
		}
		last = pt
	}
	_, err = c.held.Button(ctx, btn, false, api.Pointer{}, last[0], last[1])
	return nil, err
}

// letGo releases a drag's button after a failure, whatever the request's
// context says.
func (c *conn) letGo(btn string, at []float64) {
	ctx, cancel := context.WithTimeout(context.Background(), heldReleaseTimeout)
	defer cancel()
	_, _ = c.held.Button(ctx, btn, false, api.Pointer{}, at[0], at[1])
}

// pause waits d, or less when ctx ends first.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type scrollParams struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// scroll turns the wheel by x clicks to the right and y clicks up, where
// the pointer is: pynput's sense of scroll(dx, dy), which computer-server
// passed on.
func scroll(ctx context.Context, c *conn, p scrollParams) (any, error) {
	return wheel(ctx, c, p.X, -p.Y)
}

// wheel scrolls dx clicks right and dy clicks down (our sense).
func wheel(ctx context.Context, c *conn, dx, dy int) (any, error) {
	if dx == 0 && dy == 0 {
		return nil, nil
	}
	_, err := c.svc.desk.Scroll(ctx, api.ScrollRequest{DX: dx, DY: dy})
	return nil, err
}

type clicksParams struct {
	Clicks *int `json:"clicks"`
}

func (p clicksParams) count() int {
	if p.Clicks == nil {
		return 1
	}
	return abs(*p.Clicks)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// scrollBy scrolls clicks down (sign 1) or up (sign -1).
func scrollBy(sign int) func(context.Context, *conn, clicksParams) (any, error) {
	return func(ctx context.Context, c *conn, p clicksParams) (any, error) {
		return wheel(ctx, c, 0, sign*p.count())
	}
}

type directionParams struct {
	clicksParams
	Direction string `json:"direction"`
}

func scrollDirection(ctx context.Context, c *conn, p directionParams) (any, error) {
	n := p.count()
	switch strings.ToLower(p.Direction) {
	case "down":
		return wheel(ctx, c, 0, n)
	case "up":
		return wheel(ctx, c, 0, -n)
	case "right":
		return wheel(ctx, c, n, 0)
	case "left":
		return wheel(ctx, c, -n, 0)
	}
	return nil, api.Errorf(api.KindInvalidArgument, "direction %.20q: want up, down, left or right", p.Direction)
}
