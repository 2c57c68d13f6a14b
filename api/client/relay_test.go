package client_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
)

// The relay attachment's calls: GET reads it; PUT and DELETE change it and
// so carry an Idempotency-Key, the caller's (derived) one when it gave one.
// The daemon's side is another branch: this server stands in for its
// /v1/relay only, to hold the client's half of the contract.
func TestRelayCalls(t *testing.T) {
	var mu sync.Mutex
	keys := map[string]string{}
	var put api.RelayAttachRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != api.PathRelay || r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		mu.Lock()
		keys[r.Method] = r.Header.Get(api.HeaderIdempotencyKey)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.Method {
		case http.MethodGet:
			_ = json.NewEncoder(w).Encode(api.RelayStatus{Attached: true, Computer: "box", Connected: true})
		case http.MethodPut:
			_ = json.NewDecoder(r.Body).Decode(&put)
			_ = json.NewEncoder(w).Encode(api.RelayStatus{Attached: true, URLs: put.URLs, Connected: true})
		case http.MethodDelete:
			_ = json.NewEncoder(w).Encode(api.RelayDetached{Detached: true})
		}
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Relay(t.Context())
	if err != nil || !st.Connected || st.Computer != "box" {
		t.Fatalf("Relay: %+v, %v", st, err)
	}
	req := api.RelayAttachRequest{URLs: []string{"wss://relay.example/v1/attach"}, Token: "cuac_x", Fingerprint: "sha256:00", WaitMS: 100}
	st, err = c.AttachRelay(client.WithIdempotencyKey(t.Context(), "k1"), req)
	if err != nil || !st.Connected || len(st.URLs) != 1 {
		t.Fatalf("AttachRelay: %+v, %v", st, err)
	}
	if put.Token != req.Token || put.Fingerprint != req.Fingerprint || put.WaitMS != 100 {
		t.Fatalf("PUT body %+v, want %+v", put, req)
	}
	d, err := c.DetachRelay(t.Context())
	if err != nil || !d.Detached {
		t.Fatalf("DetachRelay: %+v, %v", d, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if keys[http.MethodGet] != "" {
		t.Errorf("GET carried key %q", keys[http.MethodGet])
	}
	if k := keys[http.MethodPut]; len(k) < 3 || k[:3] != "k1." {
		t.Errorf("PUT key %q, want one derived from k1", k)
	}
	if keys[http.MethodDelete] == "" {
		t.Error("DELETE carried no Idempotency-Key")
	}
}
