package daemon_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/internal/faultproxy"
	"github.com/trycua/cua-spacesd/internal/proctest"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// heldClock is a clock a test moves by hand.
type heldClock struct{ t atomic.Int64 }

func newHeldClock() *heldClock {
	c := &heldClock{}
	c.t.Store(time.Now().UnixNano())
	return c
}
func (c *heldClock) now() time.Time          { return time.Unix(0, c.t.Load()) }
func (c *heldClock) advance(d time.Duration) { c.t.Add(int64(d)) }

// idemEnv is a daemon behind a proxy that cuts answers on demand, and a
// client of the daemon through it.
type idemEnv struct {
	d     *spacesdtest.Daemon
	proxy *faultproxy.Proxy
	c     *client.Client
	clock *heldClock
	dir   string
}

func newIdemEnv(t *testing.T) *idemEnv {
	t.Helper()
	clock := newHeldClock()
	d := spacesdtest.Start(t, spacesdtest.Options{Now: clock.now})
	p, err := faultproxy.Start(strings.TrimPrefix(d.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c, err := client.New("http://"+p.Addr, d.Token)
	if err != nil {
		t.Fatal(err)
	}
	return &idemEnv{d: d, proxy: p, c: c, clock: clock, dir: t.TempDir()}
}

// appendLine is an exec that appends one line to the file: how many
// times it ran is the number of lines.
func appendLine(file string, extra string) api.ExecRequest {
	return api.ExecRequest{Command: api.Command{Shell: "echo ran >> " + file + extra}}
}

func lines(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// The link drops after the request reached the daemon and before its
// answer came back; the client sends the call again with its key, and the
// command has run once: the retry's answer is the first one, replayed.
func TestRetryAfterACutLinkRunsOnce(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t)
	ctx := t.Context()

	t.Run("exec", func(t *testing.T) {
		file := filepath.Join(e.dir, "exec.log")
		e.proxy.CutAnswers(1)
		res, err := e.c.Exec(ctx, appendLine(file, "; echo out"))
		if err != nil {
			t.Fatal(err)
		}
		if e.proxy.Cut.Load() == 0 {
			t.Fatal("the proxy cut no answer: the test proves nothing")
		}
		if n := lines(t, file); n != 1 {
			t.Fatalf("the command ran %d times, want once", n)
		}
		if !res.Replayed || res.Stdout != "out\n" || res.ExitCode != 0 {
			t.Fatalf("the retry's answer: %+v; want the first answer, replayed", res)
		}
	})

	t.Run("write", func(t *testing.T) {
		file := filepath.Join(e.dir, "written")
		content := []byte("the new content\n")
		cut := e.proxy.Cut.Load()
		e.proxy.CutAnswers(1)
		res, err := e.c.Write(ctx, file, bytes.NewReader(content), int64(len(content)), "")
		if err != nil {
			t.Fatal(err)
		}
		if e.proxy.Cut.Load() == cut {
			t.Fatal("the proxy cut no answer")
		}
		sum := sha256.Sum256(content)
		if !res.Replayed || res.SHA256 != hex.EncodeToString(sum[:]) || res.Size != int64(len(content)) {
			t.Fatalf("the retry's answer: %+v; want the first answer, replayed", res)
		}
		if got, _ := os.ReadFile(file); !bytes.Equal(got, content) {
			t.Fatalf("file holds %q", got)
		}
	})

	t.Run("upload commit", func(t *testing.T) {
		file := filepath.Join(e.dir, "uploaded")
		content := bytes.Repeat([]byte("upload "), 1000)
		sum := sha256.Sum256(content)
		st, err := e.c.BeginUpload(ctx, api.UploadRequest{Path: file, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:])})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.PutChunk(ctx, st.ID, 0, bytes.NewReader(content), int64(len(content))); err != nil {
			t.Fatal(err)
		}
		cut := e.proxy.Cut.Load()
		e.proxy.CutAnswers(1)
		res, err := e.c.CommitUpload(ctx, st.ID)
		if err != nil {
			t.Fatalf("commit retried with its key: %v", err)
		}
		if e.proxy.Cut.Load() == cut {
			t.Fatal("the proxy cut no answer")
		}
		if !res.Replayed || res.SHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("the retry's answer: %+v; want the first commit's, replayed", res)
		}
		if got, _ := os.ReadFile(file); !bytes.Equal(got, content) {
			t.Fatalf("file holds %d bytes, want the upload's %d", len(got), len(content))
		}
	})
}

// raw sends one call straight to the daemon with a key.
func raw(t *testing.T, d *spacesdtest.Daemon, method, path, key, contentType string, body []byte) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, d.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.Token)
	req.Header.Set("Content-Type", contentType)
	if key != "" {
		req.Header.Set(api.HeaderIdempotencyKey, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s answered %d, not JSON: %q", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, resp.Header, m
}

func execBody(t *testing.T, req api.ExecRequest) []byte {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Two calls with one key at once: one run, and both get its answer.
func TestConcurrentCallsWithOneKeyRunOnce(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t)
	file := filepath.Join(e.dir, "both.log")
	body := execBody(t, appendLine(file, "; sleep 0.5; echo done"))
	type answer struct {
		status int
		h      http.Header
		m      map[string]any
	}
	answers := make([]answer, 2)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			s, h, m := raw(t, e.d, http.MethodPost, api.PathExec, "one-key", "application/json", body)
			answers[i] = answer{s, h, m}
		})
	}
	wg.Wait()
	if n := lines(t, file); n != 1 {
		t.Fatalf("the command ran %d times, want once", n)
	}
	replayed := 0
	for _, a := range answers {
		if a.status != http.StatusOK || a.m["stdout"] != "done\n" {
			t.Fatalf("answer %d %v", a.status, a.m)
		}
		if a.m["replayed"] == true {
			replayed++
			if a.h.Get(api.HeaderIdempotencyReplayed) != "true" {
				t.Fatalf("a replayed answer without its header: %v", a.h)
			}
		}
	}
	if replayed != 1 {
		t.Fatalf("%d answers say replayed, want exactly one: %v", replayed, answers)
	}
}

// The same key on another request is refused, naming the first request's
// route, and runs nothing. A bad key is refused too.
func TestKeyReusedOnAnotherRequest(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t)
	file := filepath.Join(e.dir, "reuse.log")
	if s, _, m := raw(t, e.d, http.MethodPost, api.PathExec, "k1", "application/json", execBody(t, appendLine(file, ""))); s != http.StatusOK {
		t.Fatalf("first call: %d %v", s, m)
	}
	cases := []struct {
		name, method, path, ct string
		body                   []byte
	}{
		{"another command", http.MethodPost, api.PathExec, "application/json", execBody(t, appendLine(file, "; echo other"))},
		{"another route", http.MethodPost, api.PathFileMkdir, "application/json", []byte(`{"path":"` + filepath.Join(e.dir, "d") + `"}`)},
		{"another bulk body", http.MethodPut, api.PathFileContent + "?path=" + filepath.Join(e.dir, "f"), "application/octet-stream", []byte("x")},
	}
	for _, c := range cases {
		s, _, m := raw(t, e.d, c.method, c.path, "k1", c.ct, c.body)
		errObj, _ := m["error"].(map[string]any)
		if s != http.StatusBadRequest || errObj["kind"] != string(api.KindInvalidArgument) || errObj["reason"] != api.ReasonIdempotencyKeyReused ||
			!strings.Contains(errObj["message"].(string), "POST "+api.PathExec) {
			t.Errorf("%s with a used key: %d %v; want invalid_argument, reason %s, naming POST %s", c.name, s, m, api.ReasonIdempotencyKeyReused, api.PathExec)
		}
	}
	if n := lines(t, file); n != 1 {
		t.Fatalf("the command ran %d times, want once", n)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "d")); err == nil {
		t.Fatal("the refused mkdir ran")
	}
	// A bulk body is known by its bytes: the same key on the same bytes
	// replays, on other bytes of the same length is refused.
	path := api.PathFileContent + "?path=" + filepath.Join(e.dir, "bulk")
	if s, _, m := raw(t, e.d, http.MethodPut, path, "k2", "application/octet-stream", []byte("aaaa")); s != http.StatusOK || m["replayed"] != nil {
		t.Fatalf("bulk write: %d %v", s, m)
	}
	if s, _, m := raw(t, e.d, http.MethodPut, path, "k2", "application/octet-stream", []byte("aaaa")); s != http.StatusOK || m["replayed"] != true {
		t.Fatalf("the same bulk write again: %d %v, want replayed", s, m)
	}
	if s, _, m := raw(t, e.d, http.MethodPut, path, "k2", "application/octet-stream", []byte("bbbb")); s != http.StatusBadRequest {
		t.Fatalf("other bytes with the key: %d %v, want refused", s, m)
	}
	if got, _ := os.ReadFile(filepath.Join(e.dir, "bulk")); string(got) != "aaaa" {
		t.Fatalf("the file holds %q", got)
	}
	for _, bad := range []string{strings.Repeat("k", api.MaxIdempotencyKeyLength+1), "a key"} {
		if s, _, m := raw(t, e.d, http.MethodPost, api.PathExec, bad, "application/json", execBody(t, appendLine(file, ""))); s != http.StatusBadRequest {
			t.Fatalf("key %q: %d %v, want invalid_argument", bad, s, m)
		}
	}
	if n := lines(t, file); n != 1 {
		t.Fatalf("the command ran %d times, want once", n)
	}
}

// A key lives 10 minutes after its call: then the same call runs again.
func TestKeyExpires(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t)
	file := filepath.Join(e.dir, "expire.log")
	body := execBody(t, appendLine(file, ""))
	call := func() map[string]any {
		s, _, m := raw(t, e.d, http.MethodPost, api.PathExec, "k", "application/json", body)
		if s != http.StatusOK {
			t.Fatalf("%d %v", s, m)
		}
		return m
	}
	call()
	e.clock.advance(api.IdempotencyKeyTTL - time.Second)
	if m := call(); m["replayed"] != true || lines(t, file) != 1 {
		t.Fatalf("within 10 minutes: %v, %d runs; want a replay", m, lines(t, file))
	}
	e.clock.advance(2 * time.Second)
	if m := call(); m["replayed"] != nil || lines(t, file) != 2 {
		t.Fatalf("after 10 minutes: %v, %d runs; want a new run", m, lines(t, file))
	}
}

// The client sends a key with every mutating call, and the caller's own
// key when it gives one: a tool call an agent retries runs once.
func TestClientKeys(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t)
	file := filepath.Join(e.dir, "client.log")
	// Each try has a context of its own with the same key, as each tool
	// call of an agent does.
	for range 2 {
		ctx := client.WithIdempotencyKey(t.Context(), "agent-retry-1")
		if _, err := e.c.Exec(ctx, appendLine(file, "")); err != nil {
			t.Fatal(err)
		}
	}
	if n := lines(t, file); n != 1 {
		t.Fatalf("two calls with the caller's key ran %d times, want once", n)
	}
	// Within one try, two calls are two calls: each derives its own key.
	ctx := client.WithIdempotencyKey(t.Context(), "agent-retry-2")
	for range 2 {
		if _, err := e.c.Exec(ctx, appendLine(file, "")); err != nil {
			t.Fatal(err)
		}
	}
	if n := lines(t, file); n != 3 {
		t.Fatalf("two calls in one try ran %d times in all, want 3", n)
	}
	// Without one, each call is a call of its own.
	for range 2 {
		if _, err := e.c.Exec(t.Context(), appendLine(file, "")); err != nil {
			t.Fatal(err)
		}
	}
	if n := lines(t, file); n != 5 {
		t.Fatalf("%d runs, want 5", n)
	}
	// A call whose body cannot be read again is not resent: the cut
	// answer is an error, not a second run.
	cut := e.proxy.Cut.Load()
	e.proxy.CutAnswers(1)
	_, err := e.c.Write(context.Background(), filepath.Join(e.dir, "stream"), io.MultiReader(strings.NewReader("abc")), 3, "")
	if err == nil || e.proxy.Cut.Load() == cut {
		t.Fatalf("a streamed write through a cut link: %v (cut %d)", err, e.proxy.Cut.Load()-cut)
	}
}

// A keyed call whose client leaves runs on for a retry to adopt it: the
// retry, sent after the first client gave up mid-run, gets the first run's
// answer and nothing runs twice. A client that leaves and sends no retry
// (a cancellation on purpose) still ends its command, a few seconds later.
func TestLeftCallsAreAdoptedOrCancelled(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t)
	post := func(ctx context.Context, key string, body []byte) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.d.URL+api.PathExec, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.d.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(api.HeaderIdempotencyKey, key)
		return http.DefaultClient.Do(req)
	}
	starts := filepath.Join(e.dir, "starts")
	body := execBody(t, api.ExecRequest{Command: api.Command{Shell: "echo start >> " + starts + "; sleep 1; echo end"}})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for lines(t, starts) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel() // the first client leaves mid-run
	}()
	if _, err := post(ctx, "adopted", body); err == nil {
		t.Fatal("the first call answered before its client left")
	}
	resp, err := post(t.Context(), "adopted", body)
	if err != nil {
		t.Fatal(err)
	}
	var res api.ExecResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if res.Stdout != "end\n" || !res.Replayed || lines(t, starts) != 1 {
		t.Fatalf("the retry: %+v, %d starts; want the first run's answer, replayed, one start", res, lines(t, starts))
	}

	// No retry: the command is ended.
	pidFile := filepath.Join(e.dir, "pid")
	body = execBody(t, api.ExecRequest{Command: api.Command{Shell: "echo $$ > " + pidFile + "; exec sleep 300"}})
	ctx, cancel = context.WithCancel(t.Context())
	go func() {
		for lines(t, pidFile) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	if _, err := post(ctx, "left", body); err == nil {
		t.Fatal("sleep 300 answered")
	}
	b, _ := os.ReadFile(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the left call's command ends", func() bool { return !proctest.Alive(pid) })
	// Its key is free again: the same call runs anew.
	resp, err = post(t.Context(), "left", execBody(t, api.ExecRequest{Command: api.Command{Shell: "echo again"}}))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("another call under the key of a cancelled call: HTTP %d; want a run of its own (the key was freed)", resp.StatusCode)
	}
}
