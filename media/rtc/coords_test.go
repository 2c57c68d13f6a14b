package rtc

import "testing"

// The pointer a viewer is told of and the input it sends back agree: a
// target pixel shown in a scaled frame maps to the frame pixel whose area
// holds it, and that frame pixel maps back to a target pixel inside the
// same frame pixel's area.
func TestFrameAndTargetCoordinatesAgree(t *testing.T) {
	for _, tc := range []struct{ num, den int }{{1, 1}, {1, 2}, {1, 3}, {2, 3}, {320, 1920}} {
		var p pipeline
		p.ratio.Store(uint64(tc.num)<<32 | uint64(tc.den))
		for x := -5; x < 1920; x++ {
			fx, fy := p.toFrame(x, x)
			if fx != fy {
				t.Fatalf("%d/%d: (%d,%d) maps to (%d,%d)", tc.num, tc.den, x, x, fx, fy)
			}
			// The frame pixel fx covers target [fx*den/num, (fx+1)*den/num).
			lo, hi := float64(fx)*float64(tc.den)/float64(tc.num), float64(fx+1)*float64(tc.den)/float64(tc.num)
			if float64(x) < lo || float64(x) >= hi {
				t.Fatalf("%d/%d: target %d maps to frame %d, which covers [%g, %g)", tc.num, tc.den, x, fx, lo, hi)
			}
			if x < 0 {
				continue
			}
			tx, _ := p.toTarget(float64(fx), float64(fx))
			if tx < lo || tx >= hi {
				t.Fatalf("%d/%d: frame %d maps back to %g, outside [%g, %g)", tc.num, tc.den, fx, tx, lo, hi)
			}
		}
	}
}
