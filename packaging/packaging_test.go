// Package packaging holds the service files and image of cua-spacesd; this
// test keeps them consistent with what the daemon needs.
package packaging_test

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSystemdUnit(t *testing.T) {
	unit := read(t, "systemd/cua-spacesd.service")
	for _, want := range []string{
		"Restart=always",         // comes back after a crash
		"KillMode=control-group", // children are not orphaned
		"Delegate=yes",           // the daemon's cgroups per process tree
		"TasksMax=80%",           // bounded, with room above the trees' 75%
		"LimitNOFILE=1048576",    // a high open-file limit
		"OOMScoreAdjust=-900",    // the guest's work is OOM-killed first
		"--token-file /etc/cua-spacesd/token",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("systemd unit lacks %q", want)
		}
	}
	// Unbounded tasks would let the service's trees, all together, take
	// every pid of the Space.
	if strings.Contains(unit, "TasksMax=infinity") {
		t.Error("systemd unit leaves TasksMax unbounded")
	}
}

func TestLaunchdPlistIsWellFormed(t *testing.T) {
	dec := xml.NewDecoder(strings.NewReader(read(t, "launchd/com.trycua.spacesd.plist")))
	dec.Strict = true
	for {
		_, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("plist: %v", err)
		}
	}
	plist := read(t, "launchd/com.trycua.spacesd.plist")
	for _, want := range []string{"<key>KeepAlive</key>", "<key>AbandonProcessGroup</key>", "cua-spacesd"} {
		if !strings.Contains(plist, want) {
			t.Errorf("plist lacks %q", want)
		}
	}
}

// Every COPY source of the Dockerfile exists in the repository or is a
// binary make release writes to dist/ (for each arch the image is built
// for), so the image builds from a checkout after make release.
func TestDockerfileSources(t *testing.T) {
	df := read(t, "image/Dockerfile")
	artifacts := releaseArtifacts()
	copied := 0
	for _, line := range strings.Split(df, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "COPY" {
			continue
		}
		for _, src := range f[1 : len(f)-1] {
			if rest, ok := strings.CutPrefix(src, "dist/"); ok {
				for _, arch := range []string{"amd64", "arm64"} {
					name := strings.ReplaceAll(rest, "${TARGETARCH}", arch)
					if !slices.Contains(artifacts, name) {
						t.Errorf("Dockerfile copies %s, which make release does not write (it writes %v)", src, artifacts)
					}
				}
				copied++
				continue
			}
			if _, err := os.Stat(filepath.Join("..", src)); err != nil {
				t.Errorf("Dockerfile copies %s: %v", src, err)
			}
		}
	}
	if copied == 0 {
		t.Error("the Dockerfile takes no release binary from dist/")
	}
	for _, pkg := range []string{"xvfb", "openbox", "xterm", "tini", "sha256sum -c", "cua-spacesd selftest"} {
		if !strings.Contains(df, pkg) {
			t.Errorf("image lacks %s", pkg)
		}
	}
}
