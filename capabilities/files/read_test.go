package files_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/files"
	"github.com/trycua/cua-spacesd/internal/testenv"
)

func readAll(t *testing.T, c *files.Content) []byte {
	t.Helper()
	b, err := io.ReadAll(io.NewSectionReader(c, 0, c.Size))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Files that do not know their size are read to their end: /proc reports
// 0 bytes, sysfs 4096, whatever they hold. Seen before: /proc/cpuinfo read
// as empty.
func TestOpenReadsFilesThatDoNotKnowTheirSize(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("procfs and sysfs are Linux's")
	}
	for _, p := range []string{"/proc/version", "/proc/cpuinfo", "/sys/class/net/lo/address"} {
		t.Run(p, func(t *testing.T) {
			want, err := os.ReadFile(p)
			if err != nil {
				if strings.HasPrefix(p, "/proc/") {
					t.Fatal(err)
				}
				testenv.Missing(t, "no sysfs here: %v", err)
			}
			c, err := files.Open(t.Context(), p)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got := readAll(t, c)
			if c.Size == 0 || c.Size != int64(len(got)) {
				t.Fatalf("size %d, read %d bytes", c.Size, len(got))
			}
			// cpuinfo's MHz lines move between reads: compare the start.
			if first := bytes.SplitN(want, []byte("\n"), 2)[0]; !bytes.HasPrefix(got, first) {
				t.Errorf("read %q; want it to start with %q", got[:min(len(got), 80)], first)
			}
		})
	}
	// An empty regular file is still empty, at no cost.
	empty := t.TempDir() + "/empty"
	writeFile(t, empty, "")
	c, err := files.Open(t.Context(), empty)
	if err != nil || c.Size != 0 {
		t.Fatalf("empty file: %+v %v", c, err)
	}
	c.Close()
}

// Past the cap, the answer is a clear error, not a silent cut.
func TestOpenUnsizedPastTheCap(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("procfs is Linux's")
	}
	want, err := os.ReadFile("/proc/version")
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(want))
	c, err := files.OpenWithCap("/proc/version", n)
	if err != nil || c.Size != n {
		t.Fatalf("at the cap exactly: %+v %v", c, err)
	}
	c.Close()
	_, err = files.OpenWithCap("/proc/version", n-1)
	if api.KindOf(err) != api.KindLimitExceeded || !strings.Contains(err.Error(), "does not know its size") {
		t.Fatalf("past the cap: %v; want limit_exceeded", err)
	}
}

// The read of a file that does not know its size ends with its request:
// a client that left gets no read to its end (which a file that keeps
// giving could make long), and the file is closed.
func TestOpenUnsizedEndsWithItsContext(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("procfs is Linux's")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c, err := files.Open(ctx, "/proc/version")
	if err == nil {
		c.Close()
	}
	if api.KindOf(err) != api.KindCancelled {
		t.Fatalf("Open after the request ended: %v; want kind cancelled", err)
	}
}
