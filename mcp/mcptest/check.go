package mcptest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// eventuallyLimit bounds a wait for something the server does on its own
// time; it only bounds a broken build.
const eventuallyLimit = time.Minute

// ProgressAndCancel checks, through a client that connect makes, that the
// tool slow's progress reaches the caller and that cancelling a call of it
// stops it inside the server, which leaves its marks in dir. reach turns
// slow's arguments into the tool call that reaches it (call_tool of the
// daemon, or of the bridge, which names the Space too).
func ProgressAndCancel(t *testing.T, dir string, connect func(*sdk.ClientOptions) *sdk.ClientSession, reach func(slowArgs map[string]any) *sdk.CallToolParams) {
	t.Helper()
	var mu sync.Mutex
	var progress []float64
	cs := connect(&sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, r.Params.Progress)
		mu.Unlock()
	}})
	params := reach(map[string]any{"steps": 3})
	params.SetProgressToken("p1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError || Text(res) != "3 steps" {
		t.Fatalf("slow: %+v %v", res, err)
	}
	eventually(t, "three progress notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) == 3 && progress[2] == 3
	})

	// The first call left its mark: the second must leave its own.
	if err := os.Remove(filepath.Join(dir, Started)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, reach(map[string]any{"steps": 100000}))
		done <- err
	}()
	eventually(t, "slow starts", func() bool { return exists(filepath.Join(dir, Started)) })
	cancel()
	<-done
	eventually(t, "the server sees the cancellation", func() bool { return exists(filepath.Join(dir, Cancelled)) })
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(eventuallyLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Text joins the text parts of a result.
func Text(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
