package transfer_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/bridge/hostfs"
	"github.com/trycua/cua-spacesd/bridge/transfer"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

const size = 20<<20 + 4321

func randomFile(t *testing.T, p string, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// session is a transfer with a real test daemon, through url (the daemon's
// own, or a proxy in front of it).
func session(t testing.TB, d *spacesdtest.Daemon, url string) *transfer.Session {
	t.Helper()
	c, err := client.New(url, d.Token)
	if err != nil {
		t.Fatal(err)
	}
	caps, err := c.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return &transfer.Session{Client: c, Caps: caps, Host: hostfs.Unconfined()}
}

// cutProxy forwards TCP to the daemon and cuts the first connection that
// carries more than cutAfter bytes in one direction: a connection that
// breaks for real in the middle of a transfer.
type cutProxy struct {
	target   string
	cutAfter int64
	upload   bool // cut client->server bytes (else server->client)
	cut      atomic.Bool
	sent     atomic.Int64 // bytes forwarded in the watched direction
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
	closed   bool
}

func startCutProxy(t *testing.T, target string, cutAfter int64, upload bool) (string, *cutProxy) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{target: target, cutAfter: cutAfter, upload: upload}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.serve(c) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		// The client keeps idle connections for reuse; they end here.
		p.mu.Lock()
		p.closed = true
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return "http://" + ln.Addr().String(), p
}

func (p *cutProxy) serve(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, u)
	if p.closed {
		c.Close()
		u.Close()
	}
	p.mu.Unlock()
	closeBoth := func() { c.Close(); u.Close() }
	pipe := func(dst, src net.Conn, watched bool) {
		buf := make([]byte, 32<<10)
		var n int64
		for {
			k, err := src.Read(buf)
			if k > 0 {
				if watched {
					n += int64(k)
					p.sent.Add(int64(k))
					if n > p.cutAfter && p.cut.CompareAndSwap(false, true) {
						closeBoth()
						return
					}
				}
				if _, werr := dst.Write(buf[:k]); werr != nil {
					closeBoth()
					return
				}
			}
			if err != nil {
				closeBoth()
				return
			}
		}
	}
	done := make(chan struct{})
	go func() { pipe(u, c, p.upload); close(done) }()
	pipe(c, u, !p.upload)
	<-done
}

// An upload whose connection breaks resumes from the offset the Space
// holds, not from the start, and still lands verified.
func TestUploadResumesAfterACut(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	url, proxy := startCutProxy(t, strings.TrimPrefix(d.URL, "http://"), 8<<20, true)
	s := session(t, d, url)
	src := filepath.Join(t.TempDir(), "f.bin")
	data := randomFile(t, src, size)
	dest := filepath.Join(t.TempDir(), "f.bin")
	res, err := s.Upload(t.Context(), src, dest, transfer.UploadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !proxy.cut.Load() {
		t.Fatal("the connection was never cut")
	}
	if got, _ := os.ReadFile(dest); !bytes.Equal(got, data) || res.SHA256 != sum(data) || !res.Verified {
		t.Fatalf("landed file differs: %+v", res)
	}
	if sent := proxy.sent.Load(); sent > size+size/2 {
		t.Fatalf("%d bytes went up for a %d-byte file: the upload restarted instead of resuming", sent, size)
	}
}

// A download whose connection breaks continues with a ranged read, and is
// verified by the Space's sha256sum (a range carries no trailer).
func TestDownloadResumesAfterACut(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	url, proxy := startCutProxy(t, strings.TrimPrefix(d.URL, "http://"), 8<<20, false)
	s := session(t, d, url)
	src := filepath.Join(t.TempDir(), "f.bin")
	data := randomFile(t, src, size)
	local := t.TempDir()
	res, err := s.Download(t.Context(), src, local+"/", transfer.DownloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !proxy.cut.Load() {
		t.Fatal("the connection was never cut")
	}
	if got, _ := os.ReadFile(res.Dest); !bytes.Equal(got, data) || !res.Verified {
		t.Fatalf("downloaded file differs or unverified: %+v", res)
	}
	if sent := proxy.sent.Load(); sent > size+size/2 {
		t.Fatalf("%d bytes came down for a %d-byte file: the download restarted instead of resuming", sent, size)
	}
	if left, _ := filepath.Glob(filepath.Join(local, ".*"+transfer.PartialSuffix)); len(left) != 0 {
		t.Fatalf("partial files left: %v", left)
	}
}

// The destination of a folder download that appears while it runs (an
// empty folder, which a plain rename would replace without a word) is not
// replaced: refused, or passed by for "name (1)"; nothing is left behind.
func TestFolderDownloadNeverReplacesWhatAppeared(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	src := filepath.Join(t.TempDir(), "tree")
	os.MkdirAll(filepath.Join(src, "a"), 0o755)
	randomFile(t, filepath.Join(src, "a", "big.bin"), 4<<20)
	for _, tc := range []struct {
		policy   transfer.OnExists
		wantName string
	}{{transfer.Refuse, ""}, {transfer.Rename, "tree (1)"}} {
		local := t.TempDir()
		dest := filepath.Join(local, "tree")
		s := session(t, d, d.URL)
		s.Progress = func(p transfer.Progress) {
			if p.Done > 0 {
				os.Mkdir(dest, 0o755) // appears meanwhile, empty
			}
		}
		res, err := s.Download(t.Context(), src, dest, transfer.DownloadOptions{OnExists: tc.policy})
		var ex *transfer.ExistsError
		switch {
		case tc.wantName == "" && !errors.As(err, &ex):
			t.Fatalf("policy %v: want exists, got %v %+v", tc.policy, err, res)
		case tc.wantName != "" && (err != nil || filepath.Base(res.Dest) != tc.wantName):
			t.Fatalf("policy %v: %v %+v", tc.policy, err, res)
		}
		if ents, err := os.ReadDir(dest); err != nil || len(ents) != 0 {
			t.Fatalf("policy %v: the folder that appeared was replaced or filled: %v %v", tc.policy, ents, err)
		}
		if left, _ := filepath.Glob(filepath.Join(local, ".tree.cua-part-*")); len(left) != 0 {
			t.Fatalf("policy %v: temporary folder left: %v", tc.policy, left)
		}
	}
}

// A symlink at a partial file's name (a downloaded folder may hold one) is
// not written through: the download replaces it with a file of its own.
func TestPlantedPartialIsNotFollowed(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	src := filepath.Join(t.TempDir(), "f.bin")
	data := randomFile(t, src, 1<<20)
	fi, _ := os.Stat(src)
	local := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("mine"), 0o644)
	part := filepath.Join(local, fmt.Sprintf(".f.bin.%d-%d%s", fi.Size(), fi.ModTime().UnixNano(), transfer.PartialSuffix))
	if err := os.Symlink(victim, part); err != nil {
		t.Fatal(err)
	}
	res, err := session(t, d, d.URL).Download(t.Context(), src, local+"/", transfer.DownloadOptions{KeepPartial: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(res.Dest); !bytes.Equal(got, data) {
		t.Fatal("downloaded file differs")
	}
	if b, _ := os.ReadFile(victim); string(b) != "mine" {
		t.Fatalf("the download wrote through the planted link: victim is %d bytes", len(b))
	}
}

// A cancelled download keeps its partial file when asked (the CLI), and
// the next run resumes from it; without KeepPartial (the tool) nothing is
// left.
func TestCancelledDownloadKeepsItsPartialWhenAsked(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	src := filepath.Join(t.TempDir(), "f.bin")
	data := randomFile(t, src, size)
	for _, keep := range []bool{true, false} {
		local := t.TempDir()
		s := session(t, d, d.URL)
		ctx, cancel := context.WithCancel(t.Context())
		s.Progress = func(p transfer.Progress) {
			if p.Done > 2<<20 {
				cancel()
			}
		}
		_, err := s.Download(ctx, src, local+"/", transfer.DownloadOptions{KeepPartial: keep})
		cancel()
		if api.KindOf(err) != api.KindCancelled {
			t.Fatalf("keep %v: want cancelled, got %v", keep, err)
		}
		left, _ := filepath.Glob(filepath.Join(local, ".*"+transfer.PartialSuffix))
		if keep != (len(left) == 1) {
			t.Fatalf("keep %v: partial files %v", keep, left)
		}
		if !keep {
			continue
		}
		fi, _ := os.Stat(left[0])
		var got int64
		s.Progress = func(p transfer.Progress) {
			if got == 0 {
				got = p.Done // the first report: where the resume starts
			}
		}
		res, err := s.Download(t.Context(), src, local+"/", transfer.DownloadOptions{KeepPartial: true})
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(res.Dest); !bytes.Equal(b, data) || !res.Verified {
			t.Fatalf("resumed download differs or is unverified: %+v", res)
		}
		if got != fi.Size() || got == 0 {
			t.Fatalf("resumed from %d, the partial held %d", got, fi.Size())
		}
	}
}
