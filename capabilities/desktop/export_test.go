package desktop

import (
	"context"
	"errors"
	"image"
)

// TakeDamage hands over what the X server saw drawn on c's target since
// c's last frame or take, as Next does before it reads: tests use it to
// wait until the display is idle and to see that a frame left nothing
// behind. The frame buffer misses what it takes: ask for a whole frame
// (RequestFull) before comparing pixels again.
func TakeDamage(ctx context.Context, c *Capturer) ([]image.Rectangle, error) {
	if err := c.mu.acquire(ctx); err != nil {
		return nil, err
	}
	defer c.mu.release()
	if c.track == nil {
		return nil, errors.New("the capturer tracks no damage")
	}
	return c.track.take(ctx)
}
