package packaging_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/media/opus"
	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/spacesd/doctor"
)

// releaseVersion is what the test's releases are stamped with.
const releaseVersion = "v0.0.0-releasetest"

// linuxArch is what a linux arch is called by the tools the test asks.
type linuxArch struct {
	goarch string
	file   string // how file(1) names the machine
	triple string // Debian's multiarch triple, the cross compiler's prefix
	qemu   string // the qemu-user emulator that runs it on another arch
}

var linuxArches = []linuxArch{
	{"amd64", "x86-64", "x86_64-linux-gnu", "qemu-x86_64-static"},
	{"arm64", "ARM aarch64", "aarch64-linux-gnu", "qemu-aarch64-static"},
}

// TestRelease: make release writes every binary, the linux ones static
// and for their arch; each cua-spacesd of linux runs (the other arch's
// under qemu-user): version, doctor --json and the encoder's self-test
// pass; the darwin ones say why they cannot stream; SHA256SUMS verifies
// with sha256sum -c; and a second make release, from a copy of the
// sources in another directory with an empty Go build cache, writes the
// same bytes.
// envRelease set to 1 runs TestRelease.
const envRelease = "CUA_TEST_RELEASE"

func TestRelease(t *testing.T) {
	// make test-release runs it (and .ci/run after make test): it builds 8
	// binaries twice, the second time with an empty build cache, which
	// took 12 of make test's 19 minutes on a 2-core machine.
	if os.Getenv(envRelease) != "1" {
		t.Skipf("make release builds 8 binaries twice, the second time with an empty build cache: minutes; make test-release (%s=1) runs it", envRelease)
	}
	other := requireReleaseTools(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()

	// The first run builds in the checkout with this machine's build cache
	// (warm from make build and make cross in CI). The second compiles and
	// links everything afresh, from another path of another depth: a path,
	// a time or a random seed of the build in any object would show.
	first := filepath.Join(tmp, "first", "dist")
	makeRelease(t, root, first, "")
	src := filepath.Join(tmp, "second", "elsewhere", "src")
	copyCheckout(t, root, src)
	second := filepath.Join(tmp, "second", "dist")
	makeRelease(t, src, second, filepath.Join(tmp, "second", "gocache"))

	sums := readFile(t, filepath.Join(first, "SHA256SUMS"))
	if again := readFile(t, filepath.Join(second, "SHA256SUMS")); !bytes.Equal(sums, again) {
		t.Errorf("two make release runs differ:\nfirst:\n%s\nsecond:\n%s", sums, again)
	}

	if got, want := listDir(t, first), releaseArtifacts(); !slices.Equal(got, want) {
		t.Fatalf("dist holds %v, want %v", got, want)
	}
	checkSums(t, first, sums)
	checkInstall(t, first)

	programs := releasePrograms()
	for _, a := range linuxArches {
		for _, prog := range programs {
			bin := filepath.Join(first, prog+"-linux-"+a.goarch)
			desc := output(t, "file", bin)
			if !strings.Contains(desc, "ELF 64-bit") || !strings.Contains(desc, a.file) || !strings.Contains(desc, "statically linked") {
				t.Errorf("file %s: %s; want a static ELF for %s", bin, desc, a.file)
			}
		}
		var emulator []string
		if a.goarch == other.goarch {
			emulator = []string{other.qemu}
		}
		checkLinuxSpacesd(t, filepath.Join(first, "cua-spacesd-linux-"+a.goarch), emulator)
		run := append(slices.Clone(emulator), filepath.Join(first, "cua-bridge-linux-"+a.goarch), "version")
		if got := output(t, run[0], run[1:]...); strings.TrimSpace(got) != "cua-bridge "+releaseVersion {
			t.Errorf("%v: %q", run, got)
		}
		run = append(slices.Clone(emulator), filepath.Join(first, "cua-relay-linux-"+a.goarch), "version")
		if got := output(t, run[0], run[1:]...); !strings.HasPrefix(strings.TrimSpace(got), "cua-relay "+releaseVersion+" ") {
			t.Errorf("%v: %q", run, got)
		}
	}

	for _, arch := range []string{"amd64", "arm64"} {
		machine := map[string]string{"amd64": "x86_64", "arm64": "arm64"}[arch]
		for _, prog := range programs {
			bin := filepath.Join(first, prog+"-darwin-"+arch)
			if desc := output(t, "file", bin); !strings.Contains(desc, "Mach-O 64-bit "+machine) {
				t.Errorf("file %s: %s; want Mach-O for %s", bin, desc, machine)
			}
			if b := readFile(t, bin); !bytes.Contains(b, []byte(releaseVersion)) {
				t.Errorf("%s does not carry the version %s", bin, releaseVersion)
			}
		}
		// The macOS builds have no encoders by design: what their streams
		// answer says so, rather than the Linux advice to rebuild.
		b := readFile(t, filepath.Join(first, "cua-spacesd-darwin-"+arch))
		for _, l := range [][2]string{{vp8.LimitationOther, vp8.LimitationLinux}, {opus.LimitationOther, opus.LimitationLinux}} {
			if !bytes.Contains(b, []byte(l[0])) || bytes.Contains(b, []byte(l[1])) {
				t.Errorf("cua-spacesd-darwin-%s does not answer the macOS limitation %q", arch, l[0])
			}
		}
	}
}

// releasePrograms are the programs make release builds for every OS and arch.
func releasePrograms() []string { return []string{"cua-bridge", "cua-relay", "cua-spacesd"} }

// releaseArtifacts are the names make release writes, sorted.
func releaseArtifacts() []string {
	programs := releasePrograms()
	names := []string{"SHA256SUMS"}
	for _, goos := range []string{"darwin", "linux"} {
		for _, arch := range []string{"amd64", "arm64"} {
			for _, p := range programs {
				names = append(names, p+"-"+goos+"-"+arch)
			}
		}
	}
	slices.Sort(names)
	return names
}

// checkInstall: install.sh takes this machine's binary from a release
// directory once it matches SHA256SUMS, and refuses one that does not, or
// a directory without sums.
func checkInstall(t *testing.T, dist string) {
	t.Helper()
	name := "cua-spacesd-linux-" + runtime.GOARCH
	install := func(dir string) (string, error) {
		cmd := exec.CommandContext(t.Context(), "sh", "install.sh", dir)
		cmd.Env = append(childEnv(), "CUA_INSTALL_CHECK_ONLY=1")
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if got, err := install(dist); err != nil || got != filepath.Join(dist, name) {
		t.Errorf("install.sh %s: %q, %v; want %s", dist, got, err, filepath.Join(dist, name))
	}

	altered := filepath.Join(t.TempDir(), "altered")
	missing := filepath.Join(t.TempDir(), "nosums")
	for _, dir := range []string{altered, missing} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := copyFile(filepath.Join(dist, name), filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := copyFile(filepath.Join(dist, "SHA256SUMS"), filepath.Join(altered, "SHA256SUMS"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(altered, name), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0}) // one byte more: a different binary, still runnable
	f.Close()
	for dir, why := range map[string]string{altered: "does not match", missing: "no SHA256SUMS"} {
		if got, err := install(dir); err == nil || !strings.Contains(got, why) {
			t.Errorf("install.sh %s: %q, %v; want a refusal saying %q", dir, got, err, why)
		}
	}
}

// checkLinuxSpacesd runs a linux cua-spacesd (through emulator, when
// given): version, doctor --json with a passing encoder check, and the
// encoders' self-test, VP8's and Opus's.
func checkLinuxSpacesd(t *testing.T, bin string, emulator []string) {
	t.Helper()
	run := func(args ...string) []string { return append(append(slices.Clone(emulator), bin), args...) }

	v := run("version")
	if got := output(t, v[0], v[1:]...); !strings.HasPrefix(got, "cua-spacesd "+releaseVersion+" ") {
		t.Errorf("%v: %q, want the version %s", v, got, releaseVersion)
	}

	d := run("doctor", "--json")
	var rep doctor.Report
	if err := json.Unmarshal([]byte(output(t, d[0], d[1:]...)), &rep); err != nil {
		t.Fatalf("%v: not JSON: %v", d, err)
	}
	if !rep.OK || rep.Version != releaseVersion {
		t.Errorf("%v: ok %v, version %q: %+v", d, rep.OK, rep.Version, rep.Checks)
	}
	i := slices.IndexFunc(rep.Checks, func(c doctor.Result) bool { return c.Name == "video encoder" })
	if i < 0 || rep.Checks[i].Status != doctor.Pass {
		t.Errorf("%v: the video encoder check did not pass: %+v", d, rep.Checks)
	}

	s := run("selftest", "--json")
	var res doctor.SelfTestResult
	if err := json.Unmarshal([]byte(output(t, s[0], s[1:]...)), &res); err != nil {
		t.Fatalf("%v: not JSON: %v", s, err)
	}
	if !res.OK || res.Frames == 0 || res.OS != "linux" || res.Version != releaseVersion {
		t.Errorf("%v: %+v", s, res)
	}
	if a := res.Audio; !a.OK || a.Packets == 0 || len(a.Checks) == 0 || !strings.HasPrefix(a.Encoder, "libopus ") {
		t.Errorf("%v: the Opus self-test: %+v", s, a)
	}
	t.Logf("%s: %s, %d frames; %s, %d packets; %s/%s", filepath.Base(bin), res.Encoder, res.Frames, res.Audio.Encoder, res.Audio.Packets, res.OS, res.Arch)
}

// requireReleaseTools answers the linux arch that is not this machine's
// (built with Debian's cross compiler against its libvpx and libopus, run
// under qemu-user), and skips, or
// under CI=true fails, when something make release or the test needs is
// missing.
func requireReleaseTools(t *testing.T) linuxArch {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("make release builds the linux binaries with Debian's compilers, libvpx and libopus")
	}
	i := slices.IndexFunc(linuxArches, func(a linuxArch) bool { return a.goarch != runtime.GOARCH })
	if i < 0 || !slices.ContainsFunc(linuxArches, func(a linuxArch) bool { return a.goarch == runtime.GOARCH }) {
		t.Skipf("make release cross-compiles from amd64 or arm64, not %s", runtime.GOARCH)
	}
	other := linuxArches[i]
	var missing []string
	for _, tool := range []string{"make", "git", "gcc", other.triple + "-gcc", other.qemu, "file", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	for _, a := range linuxArches {
		for _, lib := range []struct{ archive, pkg string }{{"libvpx.a", "libvpx-dev"}, {"libopus.a", "libopus-dev"}} {
			if _, err := os.Stat("/usr/lib/" + a.triple + "/" + lib.archive); err != nil {
				missing = append(missing, lib.pkg+":"+a.goarch)
			}
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("make release needs %s (.ci/run installs them)", strings.Join(missing, ", "))
		testenv.Missing(t, "%s", msg)
	}
	return other
}

// makeRelease runs make release in dir into dist; a gocache other than ""
// is the Go build cache it gets.
func makeRelease(t *testing.T, dir, dist, gocache string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "make", "release", "VERSION="+releaseVersion, "DIST="+dist)
	cmd.Dir = dir
	cmd.Env = childEnv()
	if gocache != "" {
		cmd.Env = append(cmd.Env, "GOCACHE="+gocache)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make release in %s: %v\n%s", dir, err, out)
	}
}

// childEnv is this process's environment without what would reach into
// the release from outside: the jobserver of a make that runs this test,
// go flags, a display for doctor to find.
func childEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "GOFLAGS", "DISPLAY":
			return true
		}
		return false
	})
}

// copyCheckout copies the files of the checkout at root that git knows
// (tracked, and untracked but not ignored: the sources as they are now,
// without bin/, dist/ or node_modules/) to dst.
func copyCheckout(t *testing.T, root, dst string) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	list, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v", root, err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		from := filepath.Join(root, name)
		fi, err := os.Lstat(from)
		if os.IsNotExist(err) {
			continue // deleted in the working tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		to := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := copyFile(from, to, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

func copyFile(from, to string, perm os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// checkSums: SHA256SUMS names every binary with its hash, and verifies
// with sha256sum -c as the README tells a downloader.
func checkSums(t *testing.T, dist string, sums []byte) {
	t.Helper()
	var named []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not sha256sum's format", line)
		}
		h := sha256.Sum256(readFile(t, filepath.Join(dist, name)))
		if hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS says %s for %s, it is %x", sum, name, h)
		}
		named = append(named, name)
	}
	named = append(named, "SHA256SUMS")
	slices.Sort(named)
	if held := listDir(t, dist); !slices.Equal(named, held) {
		t.Errorf("SHA256SUMS and itself: %v; dist holds %v", named, held)
	}
	cmd := exec.Command("sha256sum", "--check", "--strict", "SHA256SUMS")
	cmd.Dir = dist
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sha256sum --check: %v\n%s", err, out)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// output runs a command with the release's environment and answers its
// stdout; a failure fails the test with its stderr.
func output(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Env = childEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s%s", name, args, err, out, stderr.String())
	}
	return string(out)
}

// TestReleaseRefuses: make release stops before it builds anything, and
// leaves no dist behind, without a version, with one that would not stamp
// cleanly, and without the C compiler of a linux encoder build (a release
// never leaves the encoder out quietly).
func TestReleaseRefuses(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		testenv.Missing(t, "make is missing")
	}
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"no version", nil, nil, "give the version"},
		{"a space in the version", []string{"VERSION=v1 2"}, nil, "use letters, digits"},
		{"a quote in the version", []string{"VERSION=v1'"}, nil, "use letters, digits"},
		{"a flag for a version", []string{"VERSION=-v1"}, nil, "use letters, digits"},
		{"no compiler for arm64", []string{"VERSION=v1.0.0"}, []string{"CC_arm64=no-such-gcc", "CC_amd64=no-such-gcc"}, "no-such-gcc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dist := filepath.Join(t.TempDir(), "dist")
			cmd := exec.CommandContext(t.Context(), "make", append([]string{"-s", "release", "DIST=" + dist}, tt.args...)...)
			cmd.Dir = ".."
			cmd.Env = append(slices.DeleteFunc(childEnv(), func(kv string) bool { return strings.HasPrefix(kv, "VERSION=") }), tt.env...)
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tt.want) {
				t.Fatalf("make release %v: %v\n%s\nwant a refusal saying %q", tt.args, err, out, tt.want)
			}
			if strings.Contains(string(out), "release: cua-") {
				t.Errorf("it started building:\n%s", out)
			}
			for _, p := range []string{dist, dist + ".tmp"} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("%s is there after a refused release (%v)", p, err)
				}
			}
		})
	}
}
