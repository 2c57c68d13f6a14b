package filesvc_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// benchUploadBytes is the file size of the upload benchmarks.
const benchUploadBytes = 256 << 20

// benchSource writes a random file of n bytes and returns its path and sha256.
func benchSource(b *testing.B, n int64) (string, string) {
	b.Helper()
	p := filepath.Join(b.TempDir(), "src.bin")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(rand.Reader, n)); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return p, hex.EncodeToString(h.Sum(nil))
}

// BenchmarkUploadVerify256MiB uploads a 256 MiB file through api.Client on
// loopback in chunks of limits.upload_chunk_bytes and commits it (the
// daemon verifies the sha256 and fsyncs). The client's own hash of its
// source is computed once, outside the timer, as a bridge would before
// announcing. Compare with BenchmarkSha256sumPlusCp256MiB.
func BenchmarkUploadVerify256MiB(b *testing.B) {
	src, sum := benchSource(b, benchUploadBytes)
	d := spacesdtest.Start(b, spacesdtest.Options{})
	c, ctx := d.Client, b.Context()
	caps, err := c.Capabilities(ctx)
	if err != nil {
		b.Fatal(err)
	}
	chunk := caps.Limits.UploadChunkBytes
	dest := filepath.Join(b.TempDir(), "dest.bin")
	f, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(benchUploadBytes)
	b.ResetTimer()
	for b.Loop() {
		st, err := c.BeginUpload(ctx, api.UploadRequest{Path: dest, Size: benchUploadBytes, SHA256: sum, Overwrite: true})
		if err != nil {
			b.Fatal(err)
		}
		for st.Offset < benchUploadBytes {
			n := min(chunk, benchUploadBytes-st.Offset)
			if st, err = c.PutChunk(ctx, st.ID, st.Offset, io.NewSectionReader(f, st.Offset, n), n); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := c.CommitUpload(ctx, st.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSha256sumPlusCp256MiB is the comparison of the upload: what a
// person does to copy a file and be sure of it, `sha256sum FILE` and
// `cp FILE DEST`, on the same kind of 256 MiB file in the same directory.
func BenchmarkSha256sumPlusCp256MiB(b *testing.B) {
	for _, tool := range []string{"sha256sum", "cp"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(b, "%s is missing", tool)
		}
	}
	src, _ := benchSource(b, benchUploadBytes)
	dest := filepath.Join(b.TempDir(), "dest.bin")
	b.SetBytes(benchUploadBytes)
	b.ResetTimer()
	for b.Loop() {
		if out, err := exec.Command("sha256sum", src).CombinedOutput(); err != nil {
			b.Fatalf("sha256sum: %v %s", err, out)
		}
		if out, err := exec.Command("cp", src, dest).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v %s", err, out)
		}
	}
}
