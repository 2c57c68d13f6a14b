package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Three `cua-relay serve --cluster` in one process: the flags reach the
// store (status on each node shows the cluster with a leader, and a user
// added on one node is listed on another), and each stops cleanly.
func TestServeCluster(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "mesh.key")
	var key bytes.Buffer
	if code := run(t.Context(), []string{"cluster", "key"}, &key, &key); code != 0 {
		t.Fatal(key.String())
	}
	if err := os.WriteFile(keyFile, key.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var ports []int
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dirs := make([]string, 3)
	codes := make([]int, 3)
	errs := make([]*bytes.Buffer, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		dirs[i], errs[i] = t.TempDir(), &bytes.Buffer{}
		args := []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dirs[i], "--insecure-no-tls", "--turn-listen", "off",
			"--node", fmt.Sprintf("n%d", i+1), "--log-level", "error", "--public-url", "ws://a:1,ws://b:1,ws://c:1",
			"--cluster", "relays", "--cluster-listen", fmt.Sprintf("127.0.0.1:%d", ports[i]),
			"--routes", strings.Join(routes, ","), // its own route too: nats-server skips it
			"--cluster-key-file", keyFile}
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = run(ctx, args, &bytes.Buffer{}, errs[i])
		}()
	}
	cli := func(dir string, args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(t.Context(), append(args, "--data-dir", dir), &out, &errb)
		return code, out.String() + errb.String()
	}
	deadline := time.Now().Add(60 * time.Second)
	for i, dir := range dirs {
		for {
			code, out := cli(dir, "status")
			if code == 0 && strings.Contains(out, "cluster relays:") && !strings.Contains(out, "leader: NONE") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("status of n%d: %d %s; serve: %s", i+1, code, out, errs[i])
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if code, out := cli(dirs[0], "user", "add", "ann"); code != 0 {
		t.Fatalf("user add on n1: %s", out)
	}
	if code, out := cli(dirs[2], "user", "ls"); code != 0 || !strings.Contains(out, "ann") {
		t.Fatalf("user ls on n3: %d %s", code, out)
	}
	cancel()
	wg.Wait()
	for i, c := range codes {
		if c != 0 {
			t.Errorf("serve n%d: %d %s", i+1, c, errs[i])
		}
	}
}
