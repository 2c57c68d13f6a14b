package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// Post sends one JSON-RPC message over plain streamable HTTP to endpoint
// with token, in session sid ("" for none; a session speaks 2025-06-18),
// and answers the status, the session id answered and the body.
func Post(t *testing.T, endpoint, token, sid string, body []byte) (int, string, []byte) {
	t.Helper()
	status, id, data, err := PostWith(t.Context(), http.DefaultClient, endpoint, token, sid, body)
	if err != nil {
		t.Fatal(err)
	}
	return status, id, data
}

// PostWith is Post through hc (a relayed or TLS client, say), with no
// Authorization when token is "", answering its error rather than failing
// the test (for a call made off the test's goroutine).
func PostWith(ctx context.Context, hc *http.Client, endpoint, token, sid string, body []byte) (int, string, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), data, err
}

// RawCall calls tool with args in session sid and answers the result's
// bytes as the server sent them (from a JSON answer or an SSE stream), for
// a test to compare what a client's decoding would hide.
func RawCall(t *testing.T, endpoint, token, sid, tool string, args map[string]any) json.RawMessage {
	t.Helper()
	const id = 2
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, data := Post(t, endpoint, token, sid, body)
	for _, line := range strings.Split(string(data), "\n") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			d = line
		}
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(d), &m) == nil && m.ID == id && m.Result != nil {
			return m.Result
		}
	}
	t.Fatalf("no result of %s in %s", tool, data)
	return nil
}

// CheckParts checks that raw is the result of "parts" as the server sent
// it: the same content parts (as JSON values, numbers exact),
// structuredContent byte for byte, and no isError.
func CheckParts(t *testing.T, raw json.RawMessage) {
	t.Helper()
	var got struct {
		Content           json.RawMessage `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(Parts().Content)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(got.Content, want) || got.IsError {
		t.Fatalf("content\n got %s\nwant %s", got.Content, want)
	}
	if string(got.StructuredContent) != PartsStructured {
		t.Fatalf("structuredContent %s, want %s byte for byte", got.StructuredContent, PartsStructured)
	}
}

// jsonEqual compares two JSON texts as values, numbers exactly.
func jsonEqual(a, b []byte) bool {
	dec := func(x []byte) any {
		d := json.NewDecoder(bytes.NewReader(x))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return nil
		}
		return v
	}
	va, vb := dec(a), dec(b)
	return va != nil && reflect.DeepEqual(va, vb)
}
