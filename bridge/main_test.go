package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The tools' roots: --root flags, else CUA_BRIDGE_ROOTS, else the working
// directory.
func TestHostRoots(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	t.Setenv(envRoots, a+string(os.PathListSeparator)+b)
	if got, _ := hostRoots(rootsFlag{b}); !slices.Equal(got, []string{b}) {
		t.Fatalf("flags: %v", got)
	}
	if got, _ := hostRoots(nil); !slices.Equal(got, []string{a, b}) {
		t.Fatalf("env: %v", got)
	}
	t.Setenv(envRoots, "")
	wd, _ := os.Getwd()
	if got, _ := hostRoots(nil); !slices.Equal(got, []string{wd}) {
		t.Fatalf("default: %v, want %s", got, wd)
	}
}

// A root inside $CUA_HOME would hand the registry's tokens to the tools:
// the bridge refuses to start with one, and says why.
func TestMCPRefusesARootInsideItsHome(t *testing.T) {
	home := t.TempDir()
	inside := filepath.Join(home, "sub")
	if err := os.Mkdir(inside, 0o700); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := run(t.Context(), []string{"mcp", "--home", home, "--root", inside}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "inside $CUA_HOME") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}
