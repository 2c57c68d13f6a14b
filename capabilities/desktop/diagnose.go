package desktop

import "context"

// Diagnosis is what the display offers, for cua-spacesd doctor.
type Diagnosis struct {
	Display       string
	Width, Height int
	XTest         bool   // input can be injected
	MITSHM        bool   // screenshots go through shared memory
	Composite     bool   // covered windows can be captured
	WindowManager string // the EWMH window manager's name, "" for none
}

// Diagnose connects to the display (when not connected yet) and reports
// what it offers; the error says why it cannot be reached.
func (d *Desktop) Diagnose(ctx context.Context) (Diagnosis, error) {
	x, err := d.conn(ctx)
	if err != nil {
		return Diagnosis{Display: d.display}, err
	}
	w, h, err := x.screenSize(ctx)
	if err != nil {
		return Diagnosis{Display: d.display}, err
	}
	return Diagnosis{
		Display:       d.display,
		Width:         w,
		Height:        h,
		XTest:         x.hasXTest,
		MITSHM:        x.shm != nil,
		Composite:     x.hasComposite,
		WindowManager: x.wm(ctx),
	}, nil
}
