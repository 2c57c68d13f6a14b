// Package doctor checks a guest for what cua-spacesd needs and reports it,
// as a human report or JSON. Exit codes: 0 pass, 1 fail, 2 doctor error.
package doctor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/audio"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/internal/cgroup"
	"github.com/trycua/cua-spacesd/media/opus"
	"github.com/trycua/cua-spacesd/spacesd/filesvc"
	"github.com/trycua/cua-spacesd/spacesd/relaysvc"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// Disk thresholds: below warnFreeBytes transfers may fail; below
// failFreeBytes even the daemon's own state may not fit.
const (
	warnFreeBytes = 1 << 30
	failFreeBytes = 100 << 20
	checkTimeout  = 5 * time.Second
)

// Status of one check.
type Status string

const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is one check's outcome.
type Result struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	// Fix says what to do, set on warn and fail.
	Fix string `json:"fix,omitempty"`
}

// Report is the whole outcome.
type Report struct {
	Version string   `json:"version"`
	OK      bool     `json:"ok"`
	Checks  []Result `json:"checks"`
}

// Options say what to check.
type Options struct {
	TokenFile string
	Display   string
	RelayURL  string
	// RelayTokenFile, RelayFingerprint and RelayCA are serve's --relay-*
	// flags; without RelayURL the state dir's attachment is checked.
	RelayTokenFile, RelayFingerprint, RelayCA string
	// StateDir holds the daemon's --tls-self-signed pair, if any.
	StateDir string
}

// Check is one named check.
type Check struct {
	Name string
	Run  func(ctx context.Context, o Options) Result
}

// Checks are the default checks, in report order.
var Checks = []Check{
	{"token file", checkTokenFile},
	{"disk space", checkDisk},
	{"shell", checkShell},
	{"pty", checkPTY},
	{"containment", checkContainment},
	{"display", checkDisplay},
	{"video encoder", checkEncoder},
	{"sound server", checkSound},
	{"relay", checkRelay},
	{"tls self-signed", checkSelfSigned},
}

// Run runs checks and builds the report.
func Run(ctx context.Context, o Options, checks []Check, version string) Report {
	r := Report{Version: version, OK: true}
	for _, c := range checks {
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		res := c.Run(cctx, o)
		cancel()
		res.Name = c.Name
		if res.Status == Fail {
			r.OK = false
		}
		r.Checks = append(r.Checks, res)
	}
	return r
}

// Main is the doctor subcommand.
func Main(args []string, stdout, stderr io.Writer, version string) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	var o Options
	fs.StringVar(&o.TokenFile, "token-file", "", "token file the daemon will use")
	fs.StringVar(&o.Display, "display", os.Getenv("DISPLAY"), "X display for the desktop features")
	fs.StringVar(&o.RelayURL, "relay", os.Getenv("CUA_RELAY_URL"), "relay URL(s) to check, as serve's --relay (default: the state dir's attachment)")
	fs.StringVar(&o.RelayTokenFile, "relay-token-file", "", "with --relay: the computer token file")
	fs.StringVar(&o.RelayFingerprint, "relay-fingerprint", "", "with --relay: the relay certificate's sha256:... fingerprint")
	fs.StringVar(&o.RelayCA, "relay-ca", "", "with --relay: PEM CAs of the relay's certificate")
	fs.StringVar(&o.StateDir, "state-dir", filesvc.DefaultStateDir(), "the daemon's state directory, where a --tls-self-signed pair is kept")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cua-spacesd doctor: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	rep := Run(context.Background(), o, Checks, version)
	return answer(stdout, stderr, "doctor", *asJSON, rep, func(w io.Writer) { WriteHuman(w, rep) }, rep.OK)
}

// answer prints a subcommand's result, as indented JSON or for a person,
// and answers its exit code: 0 when ok, 1 when not, 2 when it cannot print.
func answer(stdout, stderr io.Writer, cmd string, asJSON bool, result any, human func(io.Writer), ok bool) int {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(result); err != nil {
			fmt.Fprintf(stderr, "cua-spacesd %s: %v\n", cmd, err)
			return 2
		}
	} else {
		human(stdout)
	}
	if !ok {
		return 1
	}
	return 0
}

// WriteHuman prints the report for a person.
func WriteHuman(w io.Writer, rep Report) {
	fmt.Fprintf(w, "cua-spacesd %s doctor\n\n", rep.Version)
	for _, c := range rep.Checks {
		fmt.Fprintf(w, "  %-5s %-14s %s\n", strings.ToUpper(string(c.Status)), c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(w, "        %-14s fix: %s\n", "", c.Fix)
		}
	}
	if rep.OK {
		fmt.Fprintln(w, "\nAll required checks passed.")
	} else {
		fmt.Fprintln(w, "\nSome checks failed: see the fixes above.")
	}
}

func checkTokenFile(_ context.Context, o Options) Result {
	if o.TokenFile == "" {
		return Result{Status: Warn, Detail: "no --token-file given: the daemon will only serve loopback without a token",
			Fix: "pass --token-file FILE (mode 0600) to serve other machines"}
	}
	fi, err := os.Stat(o.TokenFile)
	if err != nil {
		return Result{Status: Fail, Detail: err.Error(), Fix: "create the token file with one random line, mode 0600"}
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return Result{Status: Fail, Detail: fmt.Sprintf("%s has mode %04o: others can read the token", o.TokenFile, fi.Mode().Perm()),
			Fix: "chmod 600 " + o.TokenFile}
	}
	b, err := os.ReadFile(o.TokenFile)
	if err != nil {
		return Result{Status: Fail, Detail: err.Error(), Fix: "make the token file readable by the daemon's user"}
	}
	if strings.TrimSpace(string(b)) == "" {
		return Result{Status: Fail, Detail: o.TokenFile + " is empty", Fix: "write a random token into it"}
	}
	return Result{Status: Pass, Detail: o.TokenFile + " holds a token, mode " + fmt.Sprintf("%04o", fi.Mode().Perm())}
}

// checkDisk looks at the root file system: writes and uploads go
// anywhere, and a full root breaks most of the guest besides.
func checkDisk(_ context.Context, _ Options) Result {
	const dir = "/"
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Result{Status: Fail, Detail: "statfs " + dir + ": " + err.Error()}
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	detail := fmt.Sprintf("%s free on %s", humanBytes(free), dir)
	switch {
	case free < failFreeBytes:
		return Result{Status: Fail, Detail: detail, Fix: "free disk space: writes and uploads will fail"}
	case free < warnFreeBytes:
		return Result{Status: Warn, Detail: detail, Fix: "free disk space before large uploads"}
	}
	return Result{Status: Pass, Detail: detail}
}

func checkShell(ctx context.Context, _ Options) Result {
	out, err := exec.CommandContext(ctx, "/bin/sh", "-c", "echo ok").Output()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		return Result{Status: Fail, Detail: fmt.Sprintf("/bin/sh does not run: %v", err), Fix: "install a POSIX shell at /bin/sh"}
	}
	return Result{Status: Pass, Detail: "/bin/sh runs commands"}
}

// checkContainment builds the cgroup subtree the daemon would hold its
// process trees in, reports what it found, and removes it again. Without
// cgroups the daemon still runs (process groups), hence a warning.
func checkContainment(_ context.Context, _ Options) Result {
	t, err := cgroup.Open(cgroup.Config{})
	if err != nil {
		return Result{Status: Warn, Detail: "no cgroups: " + err.Error() + "; processes are held in process groups, which setsid leaves",
			Fix: "run cua-spacesd as root, or under systemd with Delegate=yes (packaging/systemd)"}
	}
	defer t.Close()
	info := t.Info()
	limits := fmt.Sprintf("pids.max %s, memory.max %s per process tree", limitText(info.Group.PidsMax, false), limitText(info.Group.MemoryMax, true))
	switch {
	case info.Mode == cgroup.ModeOff:
		return Result{Status: Warn, Detail: "off: " + info.Note, Fix: "run cua-spacesd as root, or under systemd with Delegate=yes (packaging/systemd)"}
	case info.Note != "":
		return Result{Status: Warn, Detail: string(info.Mode) + ", " + limits + "; " + info.Note}
	}
	return Result{Status: Pass, Detail: string(info.Mode) + ", " + limits}
}

func limitText(v int64, bytes bool) string {
	switch {
	case v <= 0:
		return "not enforced"
	case bytes:
		return humanBytes(v)
	}
	return fmt.Sprint(v)
}

// checkPTY asks the probe the daemon's pty feature uses.
func checkPTY(_ context.Context, _ Options) Result {
	if st := process.ProbePTY(); !st.Supported {
		return Result{Status: Fail, Detail: st.Limitation,
			Fix: "mount devpts at /dev/pts (containers: --privileged is not needed, only /dev/pts and /dev/ptmx)"}
	}
	return Result{Status: Pass, Detail: "a pseudo-terminal opens"}
}

// checkDisplay connects to the X server and reports the extensions the
// desktop features rest on: XTEST (input), MIT-SHM (fast screenshots),
// Composite (covered windows) and an EWMH window manager (windows).
func checkDisplay(ctx context.Context, o Options) Result {
	if o.Display == "" {
		return Result{Status: Warn, Detail: "DISPLAY is unset: windows, screenshots, input and streaming are unavailable",
			Fix: "run the daemon with DISPLAY set (or --xvfb to start its own virtual display)"}
	}
	d := desktop.New(desktop.Options{Display: o.Display, Logger: slog.New(slog.DiscardHandler)})
	defer d.Close()
	diag, err := d.Diagnose(ctx)
	if err != nil {
		return Result{Status: Fail, Detail: err.Error(), Fix: "start the X server (Xvfb " + o.Display + ") or fix DISPLAY"}
	}
	detail := fmt.Sprintf("X display %s, %dx%d", diag.Display, diag.Width, diag.Height)
	var missing, fixes []string
	if !diag.XTest {
		missing = append(missing, "XTEST (no input)")
		fixes = append(fixes, "enable the XTEST extension (Xvfb: +extension XTEST)")
	}
	if !diag.MITSHM {
		missing = append(missing, "MIT-SHM (slower screenshots)")
		fixes = append(fixes, "share /dev/shm and IPC with the X server (containers: --ipc=host or the same IPC namespace)")
	}
	if !diag.Composite {
		missing = append(missing, "Composite (covered windows capture as seen)")
		fixes = append(fixes, "enable the Composite extension")
	}
	if diag.WindowManager == "" {
		missing = append(missing, "an EWMH window manager (no window list or focus)")
		fixes = append(fixes, "start a window manager such as openbox")
	} else {
		detail += ", window manager " + diag.WindowManager
	}
	if len(missing) == 0 {
		return Result{Status: Pass, Detail: detail + ", XTEST, MIT-SHM and Composite"}
	}
	return Result{Status: Warn, Detail: detail + "; missing: " + strings.Join(missing, ", "), Fix: strings.Join(fixes, "; ")}
}

// checkSound looks for the sound server desktop_audio captures (as the
// daemon finds it: PULSE_SERVER, else the user's runtime directory) and
// whether this build has Opus. Sound is optional: a warning at most.
func checkSound(ctx context.Context, _ Options) Result {
	if !opus.Available {
		return Result{Status: Warn, Detail: "desktop_audio is unavailable: " + opus.Limitation,
			Fix: "use the Linux release build of cua-spacesd, or make build with a C compiler, libvpx-dev and libopus-dev installed"}
	}
	if err := audio.Probe(ctx, audio.Options{}); err != nil {
		e := api.AsError(err)
		return Result{Status: Warn, Detail: "desktop_audio is unavailable: " + cmp.Or(e.Limitation, e.Message),
			Fix: "start PulseAudio (or PipeWire with pipewire-pulse) in the guest as the daemon's user, or set PULSE_SERVER for the daemon; the stream works without sound"}
	}
	return Result{Status: Pass, Detail: "a sound server answers with a default sink: the stream can carry the desktop's sound (desktop_audio, Opus " + opus.Version() + ")"}
}

// checkRelay looks at the relay the flags or the state dir name: its
// token, and that each URL answers as a cua-relay over TLS trusted as
// configured. It does not attach (a second session would replace the
// running daemon's); GET /v1/relay tells the daemon's session and its
// last error.
func checkRelay(ctx context.Context, o Options) Result {
	var urls []string
	for _, u := range strings.Split(o.RelayURL, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	detail, err := relaysvc.Check(ctx, relaysvc.Options{StateDir: o.StateDir, URLs: urls, TokenFile: o.RelayTokenFile,
		Fingerprint: o.RelayFingerprint, CAFile: o.RelayCA})
	switch {
	case errors.Is(err, relaysvc.ErrNotConfigured):
		return Result{Status: Skip, Detail: "no relay configured (--relay, or an attachment in the state dir)"}
	case err != nil:
		return Result{Status: Fail, Detail: err.Error(),
			Fix: "check the relay URL, that outbound connections to it are allowed, its certificate's trust (--relay-fingerprint or --relay-ca) and the computer token; GET /v1/relay shows the daemon's last error"}
	}
	return Result{Status: Pass, Detail: detail}
}

// checkSelfSigned looks at the --tls-self-signed pair: one that an older
// daemon made as its own CA still serves (its pins hold) but is a warning.
func checkSelfSigned(_ context.Context, o Options) Result {
	if o.StateDir == "" {
		return Result{Status: Skip, Detail: "no state directory"}
	}
	cert, err := server.ReadSelfSigned(o.StateDir)
	switch {
	case err != nil:
		return Result{Status: Fail, Detail: err.Error(),
			Fix: "remove " + filepath.Join(o.StateDir, server.SelfSignedDir) + " to make a new pair at the next start, then pin its fingerprint again (cua-bridge space add)"}
	case cert == nil:
		return Result{Status: Skip, Detail: "no self-signed pair in " + o.StateDir}
	}
	fp := api.CertFingerprint(cert.Raw)
	if server.IsCertAuthority(cert) {
		return Result{Status: Warn, Detail: fp + " is a CA (made by an older cua-spacesd): whoever holds its key can sign a certificate for any name that clients trusting the file accept",
			Fix: "restart the daemon once with --tls-self-signed --tls-renew, then register the new fingerprint it prints: cua-bridge space add NAME https://HOST:PORT --fingerprint sha256:..."}
	}
	return Result{Status: Pass, Detail: fp + ", a leaf certificate (not a CA), expires " + cert.NotAfter.Format(time.DateOnly)}
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
