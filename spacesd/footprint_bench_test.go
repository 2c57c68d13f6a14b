package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// idleSettle is how long the daemon idles before its RSS is read: long
// enough for start-up garbage to be collected and pages to settle.
const idleSettle = 3 * time.Second

// BenchmarkIdleFootprint starts the built binary (make build) and reports its
// resident memory after idling, and the binary's size. Target: ≤ 12 MB RSS.
//
// The binary's pages are dropped from the page cache before each start:
// the kernel maps a file's cached pages a whole folio at a time, and the
// folios the linker's writes left (and what earlier runs touched) are not
// those a guest booting the binary reads, so the file part of the RSS would
// measure how the binary got into the cache. The anonymous and file parts
// are reported apart for the same reason.
func BenchmarkIdleFootprint(b *testing.B) {
	bin, err := filepath.Abs("../bin/cua-spacesd")
	if err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		b.Fatalf("%v (run make build first)", err)
	}
	for i := 0; i < b.N; i++ {
		dropFromPageCache(b, bin)
		tok := filepath.Join(b.TempDir(), "token")
		os.WriteFile(tok, []byte("bench-token"), 0o600)
		cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--token-file", tok, "--display", "")
		cmd.Env = append(os.Environ(), "DISPLAY=")
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		addr := readListenAddr(b, stderr)
		resp, err := http.Get("http://" + addr + "/health")
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		time.Sleep(idleSettle)
		rss := vmRSSKiB(b, cmd.Process.Pid)
		anon, file := statusKiB(b, cmd.Process.Pid, "RssAnon:"), statusKiB(b, cmd.Process.Pid, "RssFile:")
		cmd.Process.Kill()
		cmd.Wait()
		b.ReportMetric(float64(rss)/1024, "MB-idle-rss")
		b.ReportMetric(float64(anon)/1024, "MB-anon")
		b.ReportMetric(float64(file)/1024, "MB-file")
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "MB-binary")
}

// readListenAddr reads the daemon's first log line, which names its address.
func readListenAddr(b *testing.B, r interface{ Read([]byte) (int, error) }) string {
	buf := make([]byte, 4096)
	var acc string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n, err := r.Read(buf)
		acc += string(buf[:n])
		if i := strings.Index(acc, `"addr":"`); i >= 0 {
			rest := acc[i+len(`"addr":"`):]
			if j := strings.IndexByte(rest, '"'); j >= 0 {
				return rest[:j]
			}
		}
		if err != nil {
			break
		}
	}
	b.Fatalf("no address in daemon log: %q", acc)
	return ""
}

func vmRSSKiB(b *testing.B, pid int) int64 { return statusKiB(b, pid, "VmRSS:") }

// statusKiB reads one field (in kB) of /proc/pid/status.
func statusKiB(b *testing.B, pid int, field string) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(v)
			n, _ := strconv.ParseInt(f[0], 10, 64)
			return n
		}
	}
	b.Fatal("no " + field)
	return 0
}
