package filesvc_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// A client that announces a chunk and then stops sending (a paused or
// wedged process whose TCP connection stays up) must not hold the upload
// for ever: after httpapi.BodyIdleTimeout without a byte, the chunk ends
// with what arrived, the upload is free again, and another connection
// resumes it. Before, the chunk's handler waited for the missing bytes
// for as long as the connection lived, and every other chunk of that
// upload waited behind it.
func TestStalledChunkReleasesTheUpload(t *testing.T) {
	t.Parallel()
	d := spacesdtest.Start(t, spacesdtest.Options{})
	c, ctx := d.Client, t.Context()
	data := bytes.Repeat([]byte("z"), 1000)
	st, err := c.BeginUpload(ctx, api.UploadRequest{Path: filepath.Join(t.TempDir(), "f"), Size: int64(len(data)), SHA256: sha(data)})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(d.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	path := strings.Replace(api.PathUpload, "{id}", st.ID, 1)
	fmt.Fprintf(conn, "PUT %s?offset=0 HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n%s",
		path, u.Host, d.Token, len(data), data[:100])
	// The connection stays open and silent; the daemon must answer anyway.
	_ = conn.SetReadDeadline(time.Now().Add(httpapi.BodyIdleTimeout + 30*time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled chunk: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("a stalled chunk answered %s", resp.Status)
	}
	cur, err := c.UploadStatus(ctx, st.ID)
	if err != nil || cur.Offset != 100 {
		t.Fatalf("status after the stall: %+v %v; want offset 100", cur, err)
	}
	if _, err := upload(ctx, c, st.ID, data, cur.Offset, 1000, -1); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if _, err := c.CommitUpload(ctx, st.ID); err != nil {
		t.Fatal(err)
	}
}

// A client that stops reading a download holds the handler and the open
// file only until httpapi.BodyIdleTimeout passes without progress: then the
// daemon cuts the answer short (no sha256 trailer, fewer bytes than
// X-Cua-File-Size) and lets go. Before, the handler waited for as long as
// the connection lived.
func TestStalledReadIsCut(t *testing.T) {
	t.Parallel()
	d := spacesdtest.Start(t, spacesdtest.Options{})
	// Larger than every socket buffer between the daemon and us.
	const size = 64 << 20
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(d.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s?path=%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n",
		api.PathFileContent, url.QueryEscape(p), u.Host, d.Token)
	// Read nothing until the daemon has had every chance to give up.
	time.Sleep(httpapi.BodyIdleTimeout + 5*time.Second)
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	n, err := io.Copy(io.Discard, conn)
	if err != nil {
		t.Fatalf("after %d bytes: %v (the daemon never closed the connection)", n, err)
	}
	if n >= size {
		t.Fatalf("read %d bytes: the whole answer came, so the stalled write was never cut", n)
	}
}
