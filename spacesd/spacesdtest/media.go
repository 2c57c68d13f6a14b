package spacesdtest

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// Metrics reads a daemon's /metrics at url with token: each value by its
// name (with its labels, as the daemon writes them).
func Metrics(t testing.TB, url, token string) map[string]float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/metrics: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		// The value is after the last space: a label (a route) may hold
		// spaces of its own.
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		name, v := line[:i], line[i+1:]
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("metric %s = %q", name, v)
		}
		out[name] = f
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// StartDesktop starts a virtual display of size and a daemon serving it,
// and fails the test unless the daemon supports each of features. The
// daemon connects to the display before it returns, so before any test X
// client: xgb registers extension event decoders in package-level maps as
// a connection starts, which races with another connection's reader in
// the same process.
func StartDesktop(t testing.TB, size string, features ...api.Feature) (string, *Daemon) {
	t.Helper()
	display := desktoptest.Start(t, desktoptest.Options{Size: size})
	d := Start(t, Options{Display: display})
	caps, err := d.Client.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range features {
		if ok, lim := caps.Supports(f); !ok {
			t.Fatalf("%s unsupported: %s", f, lim)
		}
	}
	return display, d
}
