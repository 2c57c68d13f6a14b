package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/testenv"
)

// hostileSpace puts a reverse proxy in front of the env's real spacesd that
// rewrites folder listings with edit, and registers it as "hostile". A
// Space may be shared by someone else (relay), so the bridge must not trust
// what it lists; no real spacesd lists such entries, hence the proxy.
func hostileSpace(t *testing.T, e *env, edit func(*api.ListResult)) {
	t.Helper()
	target, err := url.Parse(e.daemon.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(target)
	p.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.URL.Path != api.PathFileList || resp.StatusCode != http.StatusOK {
			return nil
		}
		var l api.ListResult
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
			return err
		}
		resp.Body.Close()
		edit(&l)
		b, _ := json.Marshal(l)
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	if _, err := e.reg.Add(context.Background(), "hostile", testenv.ServeHTTP(t, p), e.daemon.Token); err != nil {
		t.Fatal(err)
	}
}

// TestDownloadFolderStaysInsideDest: a folder listing whose entries climb
// out of the folder ("a/../../../x") or lie outside it must not make the
// bridge write anywhere but under dest.
func TestDownloadFolderStaysInsideDest(t *testing.T) {
	for _, tc := range []struct{ name, rel string }{
		{"dot-dot inside a name", "/a/../../../escaped.txt"},
		{"outside the folder", "/../../escaped.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			spaceRoot := t.TempDir()
			src := filepath.Join(spaceRoot, "x", "y", "tree")
			if err := os.MkdirAll(filepath.Join(src, "a"), 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(src, "a", "ok.txt"), []byte("ok"), 0o644)
			// The file the hostile entry points at exists in the Space, so
			// its download would succeed.
			os.WriteFile(filepath.Join(spaceRoot, "x", "escaped.txt"), []byte("owned"), 0o644)
			hostileSpace(t, e, func(l *api.ListResult) {
				l.Entries = append(l.Entries, api.FileInfo{Path: src + tc.rel, Name: "escaped.txt", Type: api.TypeFile, Size: 5})
			})
			cs := e.client(t, nil)
			local := t.TempDir()
			dest := filepath.Join(local, "p", "q", "out")
			r := call(t, cs, "download", map[string]any{"space": "hostile", "path": src, "dest": dest})
			err := filepath.Walk(local, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Name() == "escaped.txt" {
					t.Errorf("the Space's listing wrote %s (outside %s)", p, dest)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !r.IsError {
				t.Fatalf("download of a folder listing entries outside it succeeded: %s", text(r))
			}
			if k := errKind(t, r); k != string(api.KindTransferFailed) {
				t.Fatalf("kind %s, want transfer_failed: %s", k, text(r))
			}
		})
	}
}

// TestDownloadKeepsModes: downloaded files keep their permission bits (an
// executable stays executable) and a folder is as open as the Space's, not
// the 0700/0600 of the temp names it was assembled under.
func TestDownloadKeepsModes(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	src := filepath.Join(t.TempDir(), "tree")
	if err := os.MkdirAll(filepath.Join(src, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "bin", "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755)
	os.WriteFile(filepath.Join(src, "notes.txt"), []byte("n"), 0o644)
	for _, p := range []string{src, filepath.Join(src, "bin"), filepath.Join(src, "bin", "run.sh")} {
		os.Chmod(p, 0o755)
	}
	os.Chmod(filepath.Join(src, "notes.txt"), 0o644)
	local := t.TempDir()
	r := call(t, cs, "download", map[string]any{"space": "s1", "path": src, "dest": local})
	if r.IsError {
		t.Fatal(text(r))
	}
	r = call(t, cs, "download", map[string]any{"space": "s1", "path": filepath.Join(src, "bin", "run.sh"), "dest": local})
	if r.IsError {
		t.Fatal(text(r))
	}
	for rel, want := range map[string]os.FileMode{
		"tree": 0o755, "tree/bin": 0o755, "tree/bin/run.sh": 0o755, "tree/notes.txt": 0o644, "run.sh": 0o755,
	} {
		fi, err := os.Stat(filepath.Join(local, rel))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", rel, fi.Mode().Perm(), want)
		}
	}
}
