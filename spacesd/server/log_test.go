package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// One JSON log line per request with route, status and duration; never a
// token (right or wrong) and never a request body.
func TestRequestLogsCarryNoSecrets(t *testing.T) {
	var logs testenv.SyncBuffer
	d := spacesdtest.Start(t, spacesdtest.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	ctx := context.Background()
	secretArg := "argument-that-must-not-be-logged"
	if _, err := d.Client.Exec(ctx, api.ExecRequest{Command: api.Command{Argv: []string{"/bin/echo", secretArg}}}); err != nil {
		t.Fatal(err)
	}
	wrong := spacesdtest.Token()
	bad, _ := client.New(d.URL, wrong)
	if _, err := bad.Capabilities(ctx); api.KindOf(err) != api.KindUnauthenticated {
		t.Fatalf("wrong token: %v", err)
	}
	out := logs.String()
	for _, secret := range []string{d.Token, wrong, secretArg} {
		if strings.Contains(out, secret) {
			t.Errorf("log holds %q:\n%s", secret, out)
		}
	}
	var sawExec, sawRefusal bool
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if rec["msg"] != "request" {
			continue
		}
		if rec["duration"] == nil {
			t.Errorf("request line without duration: %q", line)
		}
		switch {
		case rec["route"] == "POST /v1/exec" && rec["status"] == float64(200):
			sawExec = true
		case rec["route"] == "GET /v1/capabilities" && rec["status"] == float64(401) && rec["kind"] == "unauthenticated":
			sawRefusal = true
		}
	}
	if !sawExec || !sawRefusal {
		t.Fatalf("missing request lines (exec %v, refusal %v):\n%s", sawExec, sawRefusal, out)
	}
}
