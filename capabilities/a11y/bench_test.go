package a11y_test

import (
	"encoding/json"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/a11y"
	"github.com/trycua/cua-spacesd/capabilities/a11y/a11ytest"
)

// BenchmarkTree1000: the tree of a window with 1,000 buttons more, and the
// size of its JSON answer.
func BenchmarkTree1000(b *testing.B) {
	env := a11ytest.Start(b, a11ytest.Options{})
	app := env.StartAppWith(b, a11ytest.AppOptions{Buttons: 1000})
	a := a11y.New(a11y.Options{Display: env.Display})
	defer a.Close()
	var size, nodes int
	for b.Loop() {
		tr, err := a.Tree(b.Context(), api.A11yTreeRequest{WindowID: app.WindowID, IncludeHidden: true})
		if err != nil {
			b.Fatal(err)
		}
		js, _ := json.Marshal(tr)
		size, nodes = len(js), len(tr.Nodes)
		if tr.Truncated {
			b.Fatalf("truncated at %d nodes", nodes)
		}
	}
	b.ReportMetric(float64(nodes), "nodes")
	b.ReportMetric(float64(size), "json-bytes")
}
