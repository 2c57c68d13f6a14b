package relayapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// The shares methods send the route, the query (?audit=1, ?who= escaped)
// and the body the contract names, and a refusal keeps its reason.
func TestClientShares(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		line := r.Method + " " + r.URL.EscapedPath() + "?" + r.URL.RawQuery
		if r.Method == http.MethodPut {
			var in relayapi.ShareRequest
			_ = json.NewDecoder(r.Body).Decode(&in)
			line += " " + in.Who + "=" + string(in.Role)
			if in.Who == "carol" {
				w.WriteHeader(http.StatusForbidden)
				_ = json.NewEncoder(w).Encode(api.ErrorEnvelope{Error: api.Errorf(api.KindPermissionDenied, "%s", relayapi.MessageSharingNeedsTeam).WithReason(relayapi.ReasonSharingNeedsTeam)})
				return
			}
		}
		got = append(got, line)
		_ = json.NewEncoder(w).Encode(relayapi.Shares{Computer: "box-1", Shares: []relayapi.Share{{Who: "bob", Role: protocol.RoleViewer}}})
	}))
	t.Cleanup(srv.Close)
	c, err := relayapi.New(srv.URL, "good", relayapi.Trust{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if s, err := c.Shares(ctx, "box-1", true); err != nil || s.Computer != "box-1" || len(s.Shares) != 1 {
		t.Fatalf("Shares: %+v, %v", s, err)
	}
	if _, err := c.Shares(ctx, "box", false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Share(ctx, "box", relayapi.ShareRequest{Who: "bob", Role: protocol.RoleEditor}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Unshare(ctx, "box", "team:t 1&x"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Unshare(ctx, "box", ""); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"GET /v1/computers/box-1/shares?audit=1",
		"GET /v1/computers/box/shares?",
		"PUT /v1/computers/box/shares? bob=editor",
		"DELETE /v1/computers/box/shares?who=team%3At+1%26x",
		"DELETE /v1/computers/box/shares?",
	}
	if len(got) != len(want) {
		t.Fatalf("requests %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: %q, want %q", i, got[i], want[i])
		}
	}
	_, err = c.Share(ctx, "box", relayapi.ShareRequest{Who: "carol"})
	if e := api.AsError(err); e.Kind != api.KindPermissionDenied || e.Reason != relayapi.ReasonSharingNeedsTeam || e.Message != relayapi.MessageSharingNeedsTeam {
		t.Fatalf("refusal: %+v", e)
	}
}
