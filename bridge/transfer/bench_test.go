package transfer_test

import (
	"crypto/rand"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/trycua/cua-spacesd/bridge/transfer"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// benchBytes is the file size of the transfer benchmarks.
const benchBytes = 256 << 20

func benchFile(b *testing.B) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "src.bin")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(f, io.LimitReader(rand.Reader, benchBytes)); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkUpload256MiB is what cp and the upload tool do, whole: hash the
// file, send it in chunks on loopback, the Space verifies and lands it.
// Compare with BenchmarkSha256sumPlusCp256MiB.
func BenchmarkUpload256MiB(b *testing.B) {
	src := benchFile(b)
	d := spacesdtest.Start(b, spacesdtest.Options{})
	s := session(b, d, d.URL)
	dest := filepath.Join(b.TempDir(), "dest.bin")
	b.SetBytes(benchBytes)
	for b.Loop() {
		if _, err := s.Upload(b.Context(), src, dest, transfer.UploadOptions{Overwrite: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDownload256MiB is what cp and the download tool do, whole:
// receive the file on loopback, hash it, check the daemon's sha256 trailer,
// fsync and land it. Compare with BenchmarkSha256sumPlusCp256MiB.
func BenchmarkDownload256MiB(b *testing.B) {
	src := benchFile(b)
	d := spacesdtest.Start(b, spacesdtest.Options{})
	s := session(b, d, d.URL)
	dest := filepath.Join(b.TempDir(), "dest.bin")
	b.SetBytes(benchBytes)
	for b.Loop() {
		if _, err := s.Download(b.Context(), src, dest, transfer.DownloadOptions{OnExists: transfer.Replace}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSha256sumPlusCp256MiB is the comparison: what a person does to
// copy a file and be sure of it, `sha256sum FILE` and `cp FILE DEST`.
func BenchmarkSha256sumPlusCp256MiB(b *testing.B) {
	for _, tool := range []string{"sha256sum", "cp"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(b, "%s is missing", tool)
		}
	}
	src := benchFile(b)
	dest := filepath.Join(b.TempDir(), "dest.bin")
	b.SetBytes(benchBytes)
	for b.Loop() {
		if out, err := exec.Command("sha256sum", src).CombinedOutput(); err != nil {
			b.Fatalf("sha256sum: %v %s", err, out)
		}
		if out, err := exec.Command("cp", src, dest).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v %s", err, out)
		}
	}
}
