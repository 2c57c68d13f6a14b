package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/mcp/mcpclient"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// largeInt is past float64's exact integers: decoded into an any and
// encoded again, it would come out as 9007199254740992.
const largeInt = "9007199254740993"

// testServer is a real go-sdk server with the tools the tests call.
type testServer struct {
	cancelled chan struct{} // closed when "wait" sees its call cancelled
	started   chan struct{} // closed when "wait" runs
}

func (ts *testServer) server() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	obj := &jsonschema.Schema{Type: "object"}
	s.AddTool(&sdk.Tool{Name: "parts", InputSchema: obj}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{
			Content: []sdk.Content{
				&sdk.TextContent{Text: "héllo\n\"world\""},
				// Data is not base64 the SDK would write (no padding issue
				// here, but exact bytes matter): the client must not touch it.
				&sdk.ImageContent{Data: []byte("\x89PNG\r\n\x1a\n"), MIMEType: "image/png"},
			},
			StructuredContent: json.RawMessage(`{"big":` + largeInt + `,"z":1,"a":2}`),
		}, nil
	})
	s.AddTool(&sdk.Tool{Name: "progress", InputSchema: obj}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		for i := 1; i <= 3; i++ {
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
				ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 3, Message: "step",
			})
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
	})
	s.AddTool(&sdk.Tool{Name: "wait", InputSchema: obj}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		close(ts.started)
		<-ctx.Done()
		close(ts.cancelled)
		return nil, ctx.Err()
	})
	return s
}

// connect serves a test server over in-memory transports and connects a
// session to it.
func connect(t *testing.T) (*testServer, *mcpclient.Session) {
	t.Helper()
	ts := &testServer{cancelled: make(chan struct{}), started: make(chan struct{})}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := ts.server().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	s, err := mcpclient.Connect(t.Context(), ct, mcpclient.Options{ClientName: "test", ClientVersion: "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return ts, s
}

// A result comes back as the server wrote it: every part, the base64 of
// the image and structuredContent's numbers and key order untouched.
func TestCallToolKeepsTheResult(t *testing.T) {
	_, s := connect(t)
	if v := s.ProtocolVersion(); v != mcpclient.ProtocolVersion {
		t.Fatalf("negotiated %q", v)
	}
	raw, err := s.CallTool(t.Context(), "parts", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"text":"héllo\n\"world\""`,
		`"data":"iVBORw0KGgo="`,
		`"structuredContent":{"big":` + largeInt + `,"z":1,"a":2}`,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("result %s lacks %s", raw, want)
		}
	}
	tools, err := s.ListTools(t.Context())
	if err != nil || len(tools) != 3 {
		t.Fatalf("tools/list: %d tools, %v", len(tools), err)
	}
}

func TestProgressReachesTheCaller(t *testing.T) {
	_, s := connect(t)
	var mu sync.Mutex
	var got []mcpclient.Progress
	if _, err := s.CallTool(t.Context(), "progress", nil, func(p mcpclient.Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[2].Progress != 3 || got[2].Total != 3 || got[2].Message != "step" {
		t.Fatalf("progress %+v", got)
	}
}

// A caller that leaves cancels the call in the server.
func TestCancelReachesTheServer(t *testing.T) {
	ts, s := connect(t)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, "wait", nil, nil)
		errc <- err
	}()
	<-ts.started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	select {
	case <-ts.cancelled:
	case <-time.After(time.Minute):
		t.Fatal("the server's handler was never cancelled")
	}
}

// A server that never answers initialize fails Connect when its context
// ends, and leaves nothing running.
func TestInitializeNeverAnswered(t *testing.T) {
	outR, outW := io.Pipe() // the server's stdout: nothing is ever written
	inR, inW := io.Pipe()   // its stdin: read and dropped
	go func() { _, _ = io.Copy(io.Discard, inR) }()
	defer outW.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := mcpclient.ConnectIO(ctx, outR, inW, mcpclient.Options{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("connect to a mute server: %v", err)
	}
}

// A server that goes away (its process died: stdout and stdin closed)
// fails the calls in flight with ErrClosed, and every later one. Only the
// later ones are ErrNotProcessed: one in flight may have run.
func TestServerGoneFailsCalls(t *testing.T) {
	ts := &testServer{cancelled: make(chan struct{}), started: make(chan struct{})}
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = ts.server().Run(context.Background(), &sdk.IOTransport{Reader: inR, Writer: outW})
	}()
	s, err := mcpclient.ConnectIO(t.Context(), outR, inW, mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallTool(t.Context(), "wait", nil, nil)
		errc <- err
	}()
	<-ts.started
	outW.Close()
	inR.Close()
	if err := <-errc; !errors.Is(err, mcpclient.ErrClosed) || errors.Is(err, mcpclient.ErrNotProcessed) {
		t.Fatalf("call of a closed session: %v", err)
	}
	<-s.Done()
	if _, err := s.CallTool(t.Context(), "parts", nil, nil); !errors.Is(err, mcpclient.ErrClosed) || !errors.Is(err, mcpclient.ErrNotProcessed) {
		t.Fatalf("call after the end: %v", err)
	}
	<-served
}
