package procsvc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

func TestExecHTTP(t *testing.T) {
	t.Parallel()
	c := spacesdtest.Start(t, spacesdtest.Options{}).Client
	for _, tc := range []struct {
		name string
		req  api.ExecRequest
		want api.ExecResult
	}{
		{"argv", api.ExecRequest{Command: api.Command{Argv: []string{"printf", "%s-%s", "a", "b"}}}, api.ExecResult{Stdout: "a-b"}},
		{"shell", api.ExecRequest{Command: api.Command{Shell: "echo o; echo e >&2; exit 42"}}, api.ExecResult{Stdout: "o\n", Stderr: "e\n", ExitCode: 42}},
		{"env", api.ExecRequest{Command: api.Command{Shell: "echo $X", Env: map[string]string{"X": "y z"}}}, api.ExecResult{Stdout: "y z\n"}},
		{"cwd", api.ExecRequest{Command: api.Command{Argv: []string{"pwd"}, Cwd: "/"}}, api.ExecResult{Stdout: "/\n"}},
		{"stdin", api.ExecRequest{Command: api.Command{Argv: []string{"tr", "a-z", "A-Z"}}, Stdin: "shout"}, api.ExecResult{Stdout: "SHOUT"}},
		{"truncated", api.ExecRequest{Command: api.Command{Shell: "seq 1 1000 >&2"}, MaxOutputBytes: 4}, api.ExecResult{Stderr: "1\n2\n", StderrTruncated: true}},
		{"timeout", api.ExecRequest{Command: api.Command{Shell: "sleep 100 & sleep 100", TimeoutMS: 100}}, api.ExecResult{ExitCode: 137, Signal: "KILL", TimedOut: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Exec(t.Context(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			res.DurationMS = 0
			if !reflect.DeepEqual(*res, tc.want) {
				t.Fatalf("got %+v\nwant %+v", *res, tc.want)
			}
		})
	}
}

func TestProcessErrorsHTTP(t *testing.T) {
	t.Parallel()
	d := spacesdtest.Start(t, spacesdtest.Options{})
	c := d.Client
	ctx := t.Context()
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		kind                     api.Kind
	}{
		{"exec bad json", http.MethodPost, api.PathExec, `{"argv":`, 400, api.KindInvalidArgument},
		{"exec unknown field", http.MethodPost, api.PathExec, `{"argv":["true"],"nope":1}`, 400, api.KindInvalidArgument},
		{"exec no command", http.MethodPost, api.PathExec, `{}`, 400, api.KindInvalidArgument},
		{"exec missing program", http.MethodPost, api.PathExec, `{"argv":["/no/such/prog"]}`, 404, api.KindNotFound},
		{"start bad json", http.MethodPost, api.PathProcesses, `[1,2]`, 400, api.KindInvalidArgument},
		{"get unknown", http.MethodGet, "/v1/processes/nope", ``, 404, api.KindNotFound},
		{"stream unknown", http.MethodGet, "/v1/processes/nope/stream", ``, 404, api.KindNotFound},
		{"stdin unknown", http.MethodPost, "/v1/processes/nope/stdin", `x`, 404, api.KindNotFound},
		{"stdin sent as json", http.MethodPost, "/v1/processes/nope/stdin", `"x"`, 415, api.KindInvalidArgument},
		{"signal unknown", http.MethodPost, "/v1/processes/nope/signal", `{"signal":"TERM"}`, 404, api.KindNotFound},
		{"signal bad name", http.MethodPost, "/v1/processes/nope/signal", `{"signal":"SEGV"}`, 400, api.KindInvalidArgument},
		{"resize unknown", http.MethodPost, "/v1/processes/nope/resize", `{"cols":1,"rows":1}`, 404, api.KindNotFound},
		{"resize bad json", http.MethodPost, "/v1/processes/nope/resize", `{"cols":-1}`, 400, api.KindInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			ctype := "application/json"
			if strings.HasSuffix(tc.path, "/stdin") && tc.name != "stdin sent as json" {
				ctype = "application/octet-stream"
			}
			_, err := c.Do(ctx, tc.method, tc.path, nil, body, ctype)
			var e *api.Error
			if !errors.As(err, &e) || e.Status != tc.status || e.Kind != tc.kind {
				t.Fatalf("err %#v, want %d %s", err, tc.status, tc.kind)
			}
		})
	}
}

func TestProcessLifecycleHTTP(t *testing.T) {
	t.Parallel()
	c := spacesdtest.Start(t, spacesdtest.Options{}).Client
	ctx := t.Context()
	info, err := c.Start(ctx, api.StartRequest{Command: api.Command{Argv: []string{"cat"}}, Stdin: true, Tag: "life"})
	if err != nil {
		t.Fatal(err)
	}
	if info.State != api.StateRunning || info.PID == 0 || info.Tag != "life" {
		t.Fatalf("start info %+v", info)
	}
	if res, err := c.WriteStdin(ctx, info.ID, []byte("over http\n"), false); err != nil || res.Bytes != int64(len("over http\n")) {
		t.Fatalf("stdin answered %+v, %v", res, err)
	}
	s, err := c.StreamProcess(ctx, info.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(api.StreamInput{Type: "stdin", Data: []byte("over ws\n")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(api.StreamInput{Type: "resize", Size: &api.PTYSize{Cols: 1, Rows: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(api.StreamInput{Type: "close_stdin"}); err != nil {
		t.Fatal(err)
	}
	var out []byte
	var exit *api.ProcessInfo
	sawError := false
	for exit == nil {
		ev, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case "output":
			out = append(out, ev.Data...)
		case "error": // the resize of a process without a PTY
			sawError = ev.Error != nil && ev.Error.Kind == api.KindInvalidArgument
		case "exit":
			exit = ev.Exit
		}
	}
	if string(out) != "over http\nover ws\n" || *exit.ExitCode != 0 || !sawError {
		t.Fatalf("out %q exit %+v error event %v", out, exit, sawError)
	}
	got, err := c.Process(ctx, info.ID)
	if err != nil || got.State != api.StateExited || got.ExitedAt == nil || got.StdoutBytes != int64(len(out)) {
		t.Fatalf("process after exit %+v, %v", got, err)
	}
	list, err := c.Processes(ctx)
	if err != nil || len(list) != 1 || list[0].ID != info.ID {
		t.Fatalf("list %+v, %v", list, err)
	}
	if _, err := c.WriteStdin(ctx, info.ID, []byte("late"), false); api.KindOf(err) != api.KindInvalidArgument {
		t.Fatalf("stdin after exit: %v", err)
	}
	if err := c.Signal(ctx, info.ID, "TERM"); api.KindOf(err) != api.KindInvalidArgument {
		t.Fatalf("signal after exit: %v", err)
	}
	resp, err := c.Do(ctx, http.MethodGet, "/metrics", nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	for _, want := range []string{"cua_spacesd_processes_started_total 1\n", "cua_spacesd_processes_running 0\n"} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestSignalHTTP(t *testing.T) {
	t.Parallel()
	c := spacesdtest.Start(t, spacesdtest.Options{}).Client
	ctx := t.Context()
	for _, name := range []string{"TERM", "SIGINT", "hup", "KILL"} {
		info, err := c.Start(ctx, api.StartRequest{Command: api.Command{Argv: []string{"sleep", "100"}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Signal(ctx, info.ID, name); err != nil {
			t.Fatal(err)
		}
		exit := waitExit(t, c, info.ID)
		want := strings.ToUpper(strings.TrimPrefix(strings.ToUpper(name), "SIG"))
		if exit.Signal != want {
			t.Fatalf("%s: exit %+v", name, exit)
		}
	}
}

// waitExit follows a process's stream to its exit event.
func waitExit(t *testing.T, c *client.Client, id string) *api.ProcessInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := c.StreamProcess(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for {
		ev, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "exit" {
			return ev.Exit
		}
	}
}

// A client that disconnects mid-output and reconnects from the offsets it
// reached gets every byte exactly once.
func TestStreamReconnectLosesNothing(t *testing.T) {
	t.Parallel()
	c := spacesdtest.Start(t, spacesdtest.Options{}).Client
	ctx := t.Context()
	// ~590 KB: under the ring, so whatever the timing no byte may be lost.
	const n = 100000
	info, err := c.Start(ctx, api.StartRequest{Command: api.Command{Shell: fmt.Sprintf("seq 1 %d; seq 1 %d >&2", n, n/2)}})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb []byte
	var exited bool
	for round := 0; !exited; round++ {
		s, err := c.StreamProcess(ctx, info.ID, int64(len(out)), int64(len(errb)))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3 && !exited; i++ { // a few events, then drop the connection
			ev, err := s.Next()
			if err != nil {
				t.Fatal(err)
			}
			switch ev.Type {
			case "output":
				off := &out
				if ev.Stream == api.StreamStderr {
					off = &errb
				}
				if ev.Offset != int64(len(*off)) {
					t.Fatalf("event at offset %d, have %d bytes", ev.Offset, len(*off))
				}
				*off = append(*off, ev.Data...)
			case "gap":
				t.Fatalf("gap %+v", ev)
			case "exit":
				exited = true
			}
		}
		_ = s.Close()
	}
	want := func(k int) []byte {
		var b bytes.Buffer
		for i := 1; i <= k; i++ {
			fmt.Fprintln(&b, i)
		}
		return b.Bytes()
	}
	if !bytes.Equal(out, want(n)) || !bytes.Equal(errb, want(n/2)) {
		t.Fatalf("stdout %d bytes, stderr %d bytes: differ from the sequences", len(out), len(errb))
	}
}

func TestManyConcurrentExecsHTTP(t *testing.T) {
	t.Parallel()
	c := spacesdtest.Start(t, spacesdtest.Options{}).Client
	const n, size = 200, 64 << 10
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each prints its own pattern, so a byte from another process shows.
			res, err := c.Exec(t.Context(), api.ExecRequest{Command: api.Command{
				Shell: fmt.Sprintf("yes %06d | head -c %d", i, size)}})
			want := strings.Repeat(fmt.Sprintf("%06d\n", i), size/7+1)[:size]
			switch {
			case err != nil:
				errs <- err
			case res.Stdout != want || res.ExitCode != 0 || res.Truncated():
				errs <- fmt.Errorf("exec %d: %d bytes, exit %d", i, len(res.Stdout), res.ExitCode)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestPTYOverHTTP(t *testing.T) {
	t.Parallel()
	c := spacesdtest.Start(t, spacesdtest.Options{}).Client
	ctx := t.Context()
	caps, err := c.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, lim := caps.Supports(api.FeaturePTY); !ok {
		t.Fatalf("pty unsupported here: %s", lim)
	}
	if caps.Limits.ExitRetentionSeconds < 600 || caps.Limits.MaxProcesses == 0 || caps.Limits.ProcessRingBytes == 0 || caps.Limits.MaxExecOutputBytes == 0 {
		t.Fatalf("limits %+v", caps.Limits)
	}
	info, err := c.Start(ctx, api.StartRequest{Command: api.Command{Shell: "while read l; do [ \"$l\" = q ] && exit 5; stty size; done"}, PTY: &api.PTYSize{Cols: 80, Rows: 24}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.StreamProcess(ctx, info.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []byte
	expect := func(want string) {
		t.Helper()
		for !bytes.Contains(out, []byte(want)) {
			ev, err := s.Next()
			if err != nil {
				t.Fatalf("waiting for %q in %q: %v", want, out, err)
			}
			if ev.Type == "exit" {
				t.Fatalf("exited waiting for %q in %q", want, out)
			}
			out = append(out, ev.Data...)
		}
	}
	send := func(line string) {
		t.Helper()
		if err := s.Send(api.StreamInput{Type: "stdin", Data: []byte(line + "\n")}); err != nil {
			t.Fatal(err)
		}
	}
	send("echo-me")
	expect("echo-me") // the terminal echoes
	expect("24 80")
	if err := c.Resize(ctx, info.ID, api.PTYSize{Cols: 100, Rows: 30}); err != nil {
		t.Fatal(err)
	}
	send("x")
	expect("30 100")
	if err := s.Send(api.StreamInput{Type: "resize", Size: &api.PTYSize{Cols: 120, Rows: 40}}); err != nil {
		t.Fatal(err)
	}
	send("y")
	expect("40 120")
	send("q")
	for {
		ev, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "exit" {
			if *ev.Exit.ExitCode != 5 || !ev.Exit.PTY {
				t.Fatalf("exit %+v", ev.Exit)
			}
			return
		}
	}
}

// Rotating the token ends open streams; the process goes on.
func TestTokenRotationEndsStream(t *testing.T) {
	t.Parallel()
	auth := server.NewAuth("old-token", slogDiscard())
	d := spacesdtest.Start(t, spacesdtest.Options{Auth: auth})
	c, err := client.New(d.URL, "old-token")
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Start(t.Context(), api.StartRequest{Command: api.Command{Argv: []string{"sleep", "100"}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.StreamProcess(t.Context(), info.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	auth.Rotate("new-token")
	ev, err := s.Next()
	if err == nil {
		t.Fatalf("stream goes on after rotation: %+v", ev)
	}
	// The close frame's reason reaches the client: it learns why.
	if api.KindOf(err) != api.KindStream || !strings.Contains(err.Error(), "stream ended") {
		t.Fatalf("stream end after rotation: %v", err)
	}
	c2, _ := client.New(d.URL, "new-token")
	got, err := c2.Process(t.Context(), info.ID)
	if err != nil || got.State != api.StateRunning {
		t.Fatalf("process after rotation %+v, %v", got, err)
	}
	if err := c2.Signal(t.Context(), info.ID, "KILL"); err != nil {
		t.Fatal(err)
	}
}

// No goroutine outlives a daemon that served execs, processes and streams.
// Not parallel: goleak must see only this test's goroutines.
func TestProcessNoGoroutineLeak(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Run("daemon", func(t *testing.T) {
		c := spacesdtest.Start(t, spacesdtest.Options{}).Client
		if _, err := c.Exec(t.Context(), api.ExecRequest{Command: api.Command{Argv: []string{"true"}}}); err != nil {
			t.Fatal(err)
		}
		info, err := c.Start(t.Context(), api.StartRequest{Command: api.Command{Shell: "echo hi; sleep 100"}, Stdin: true})
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.StreamProcess(t.Context(), info.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if ev, err := s.Next(); err != nil || ev.Type != "output" {
			t.Fatalf("first event %+v, %v", ev, err)
		}
		// The daemon shuts down with the stream open and the process running.
		t.Cleanup(func() { _ = s.Close() })
	})
}

func slogDiscard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// eventually polls cond until it holds, failing the test after a minute.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
