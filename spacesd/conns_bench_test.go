package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// idleSockets is the flood of the issue: sockets that ask GET /health once
// and go quiet.
const idleSockets = 3000

// BenchmarkIdleSocketsFootprint starts the built binary (make build), reads
// its RSS and open descriptors idle, then again while idleSockets sockets
// that asked GET /health once stay open. Read the pairs: the daemon keeps
// at most MaxAnonymousConns of them, so both figures should stay near idle.
func BenchmarkIdleSocketsFootprint(b *testing.B) {
	bin, err := filepath.Abs("../bin/cua-spacesd")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		b.Fatalf("%v (run make build first)", err)
	}
	for i := 0; i < b.N; i++ {
		tok := filepath.Join(b.TempDir(), "token")
		if err := os.WriteFile(tok, []byte("bench-token"), 0o600); err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--token-file", tok, "--display", "")
		cmd.Env = append(os.Environ(), "DISPLAY=")
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		addr := readListenAddr(b, stderr)
		// One log line per request: a pipe nobody reads would stall the daemon.
		go func() { _, _ = io.Copy(io.Discard, stderr) }()
		pid := cmd.Process.Pid
		time.Sleep(idleSettle)
		idleRSS, idleFDs := vmRSSKiB(b, pid), openFDs(b, pid)

		conns := make([]net.Conn, 0, idleSockets)
		for range idleSockets {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/health", nil)
			if err := req.Write(c); err != nil {
				b.Fatal(err)
			}
			// The answer may never come to a socket evicted at once.
			if resp, err := http.ReadResponse(bufio.NewReader(c), req); err == nil {
				resp.Body.Close()
			}
			conns = append(conns, c)
		}
		time.Sleep(idleSettle)
		floodRSS, floodFDs := vmRSSKiB(b, pid), openFDs(b, pid)
		for _, c := range conns {
			_ = c.Close()
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b.ReportMetric(float64(idleRSS)/1024, "MB-rss-idle")
		b.ReportMetric(float64(floodRSS)/1024, "MB-rss-3000-idle-sockets")
		b.ReportMetric(float64(idleFDs), "fds-idle")
		b.ReportMetric(float64(floodFDs), "fds-3000-idle-sockets")
	}
}

func openFDs(b *testing.B, pid int) int {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		b.Fatal(err)
	}
	return len(ents)
}
