package doctor_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/spacesd/doctor"
)

// The display check reports what a real X server offers: everything with
// openbox running, a warning naming the window manager without one.
func TestDoctorDisplayOnXvfb(t *testing.T) {
	tests := []struct {
		name   string
		opts   desktoptest.Options
		status doctor.Status
		want   string
	}{
		{"openbox", desktoptest.Options{Size: "800x600"}, doctor.Pass, "800x600"},
		{"no window manager", desktoptest.Options{Size: "800x600", NoWindowManager: true}, doctor.Warn, "window manager"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			display := desktoptest.Start(t, tt.opts)
			var out, errb bytes.Buffer
			doctor.Main([]string{"--json", "--display", display}, &out, &errb, "test")
			var rep doctor.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("%v: %s %s", err, out.String(), errb.String())
			}
			got := statusOf(t, rep, "display")
			if got.Status != tt.status || !strings.Contains(got.Detail, tt.want) {
				t.Fatalf("display check = %+v, want %s mentioning %q", got, tt.status, tt.want)
			}
		})
	}
}
