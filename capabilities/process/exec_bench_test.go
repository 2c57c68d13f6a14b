package process_test

import (
	"slices"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
)

// BenchmarkExecTrue is Manager.Exec of /bin/true, without HTTP: what
// containment (a cgroup per process, made ahead, entered at birth, removed
// behind) costs an exec, beside process groups only.
func BenchmarkExecTrue(b *testing.B) {
	for _, mode := range []string{process.ContainmentAuto, process.ContainmentOff} {
		b.Run("containment="+mode, func(b *testing.B) {
			m := process.NewManager(process.Options{Containment: mode})
			defer m.Close()
			req := api.ExecRequest{Command: api.Command{Argv: []string{"/bin/true"}}}
			var d []time.Duration
			for b.Loop() {
				start := time.Now()
				if res, err := m.Exec(b.Context(), req); err != nil || res.ExitCode != 0 {
					b.Fatalf("exec: %+v, %v", res, err)
				}
				d = append(d, time.Since(start))
			}
			slices.Sort(d)
			b.ReportMetric(float64(d[len(d)/2])/float64(time.Millisecond), "ms/median")
		})
	}
}
