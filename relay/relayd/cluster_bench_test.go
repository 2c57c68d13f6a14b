package relayd_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// The cross-node hop beside the same-node path, same run, same Space (a
// stand-in on node b; its handler answers at once, so the figures are the
// relay's): a call's round trip on a pooled stream through node a to b vs
// straight to b (target: the hop adds <= 1 ms at p50).
func BenchmarkClusterCall(b *testing.B) {
	f := newClusterFixture(b)
	for _, c := range []struct {
		name string
		via  *testRelay
	}{{"same-node", f.b}, {"cross-node", f.a}} {
		b.Run(c.name, func(b *testing.B) {
			client := c.via.client()
			call := func() time.Duration {
				req, _ := http.NewRequest(http.MethodGet, c.via.url("/c/pc/v1/health"), nil)
				req.Header.Set("Authorization", "Bearer "+f.ann)
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%d", resp.StatusCode)
				}
				return time.Since(start)
			}
			for range 20 { // warm: the pools and the trunk
				call()
			}
			ds := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				ds = append(ds, call())
			}
			b.StopTimer()
			reportQuantiles(b, ds)
		})
	}
}

// A 256 MiB download from the Space on b (its data connection) through
// node a vs straight from b, same run.
func BenchmarkClusterDownload256MiB(b *testing.B) {
	const size = 256 << 20
	f := newClusterFixture(b)
	for _, c := range []struct {
		name string
		via  *testRelay
	}{{"same-node", f.b}, {"cross-node", f.a}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			for range b.N {
				resp := c.via.get(b, api.PathFileContent+"?path=/x&size="+fmt.Sprint(size), f.ann)
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || n != size {
					b.Fatalf("%d bytes, %v", n, err)
				}
			}
		})
	}
}

// From an unshare on node a to the end of the viewer's stream held through
// node c (the Space on b): the notice, the home node's cut, and the
// stream's end across two trunks (target <= 500 ms).
func BenchmarkClusterUnshareToEnd(b *testing.B) {
	f := newClusterFixture(b)
	ds := make([]time.Duration, 0, b.N)
	for range b.N {
		if st, body, _ := f.a.do(http.MethodPut, "/v1/computers/pc/shares", f.ann, relayapi.ShareRequest{Who: "bob", Role: protocol.RoleViewer}); st != http.StatusOK {
			b.Fatalf("share: %d %s", st, body)
		}
		resp := f.c.get(b, "/hold", f.bob)
		if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
			b.Fatal(err)
		}
		ended := make(chan time.Time, 1)
		go func() {
			_, _ = io.Copy(io.Discard, resp.Body)
			ended <- time.Now()
		}()
		start := time.Now()
		if st, body, _ := f.a.do(http.MethodDelete, "/v1/computers/pc/shares?who=bob", f.ann, nil); st != http.StatusOK {
			b.Fatalf("unshare: %d %s", st, body)
		}
		select {
		case at := <-ended:
			ds = append(ds, at.Sub(start))
		case <-time.After(30 * time.Second):
			b.Fatal("the stream outlived the unshare")
		}
		resp.Body.Close()
		select {
		case <-f.sp.kicks:
		default:
		}
	}
	b.StopTimer()
	reportQuantiles(b, ds)
}

// reportQuantiles reports the median and p99 of ds in µs.
func reportQuantiles(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), "p99-µs")
}

// A store read on node a (a user by name: two bucket gets, answered by
// the streams' leaders, wherever they are) while nothing else runs, and
// while 256 MiB downloads run one after the other from the Space on b
// through a: what the trunks' bytes cost the store's requests on the
// same node.
func BenchmarkClusterStoreReadDuringDownload(b *testing.B) {
	const size = 256 << 20
	f := newClusterFixture(b)
	read := func() time.Duration {
		start := time.Now()
		if _, err := f.a.Store.UserByName(b.Context(), "ann"); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	b.Run("idle", func(b *testing.B) {
		ds := make([]time.Duration, 0, b.N)
		for range b.N {
			ds = append(ds, read())
			time.Sleep(5 * time.Millisecond)
		}
		reportQuantiles(b, ds)
	})
	b.Run("during-256MiB-download", func(b *testing.B) {
		stop, done := make(chan struct{}), make(chan error, 1)
		go func() {
			for {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				req, _ := http.NewRequest(http.MethodGet, f.a.url("/c/pc"+api.PathFileContent+"?path=/x&size="+fmt.Sprint(size)), nil)
				req.Header.Set("Authorization", "Bearer "+f.ann)
				resp, err := f.a.client().Do(req)
				if err != nil {
					done <- err
					return
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || n != size {
					done <- fmt.Errorf("%d bytes, %v", n, err)
					return
				}
			}
		}()
		time.Sleep(200 * time.Millisecond) // the download under way
		ds := make([]time.Duration, 0, b.N)
		for range b.N {
			ds = append(ds, read())
			time.Sleep(5 * time.Millisecond)
		}
		close(stop)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		reportQuantiles(b, ds)
	})
}
