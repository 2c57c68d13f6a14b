#!/bin/sh
# make bench: every performance figure of DESIGN §5 that this build has,
# each printed beside its comparison, measured in the same run. Nothing is
# asserted: read the pairs.
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
COUNT=${BENCH_COUNT:-3}

section() { printf '\n== %s\n' "$*"; }
bench() { # bench PKG REGEX BENCHTIME
	$GO test -run '^$' -bench "$2" -benchtime "$3" -count "$COUNT" "$1" 2>&1 \
		| grep -E '^(Benchmark|---|FAIL|panic)' || true
}
# need COMMAND PACKAGE FOR: a comparison's program, Debian's PACKAGE,
# installed when COMMAND is missing and this runs as root; without it the
# section FOR says what it lacks.
need() {
	command -v "$1" >/dev/null 2>&1 && return 0
	{ [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; } || return 0
	echo "bench: installing $2 for the $3 section"
	(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2") >/dev/null 2>&1 ||
		echo "bench: $2 could not be installed; the $3 section says so"
}

section "exec /bin/true: spacesd over HTTP on loopback (target median <= 2 ms), each command in a cgroup of its own (containment=auto) and in a process group only (off), vs a direct fork/exec"
bench ./spacesd/procsvc 'ExecTrueHTTP|ForkExecTrue' 2000x
bench ./capabilities/process 'ExecTrue$' 2000x

section "exec /bin/true over raw HTTP on one connection, without an Idempotency-Key vs with a new one per call (the key and its answer kept 10 minutes), same run"
bench ./spacesd/procsvc 'ExecIdempotencyKey' 2000x

section "upload + sha256 verify of 256 MiB through spacesd (target >= 70 %) vs sha256sum + cp of the same size"
COUNT=2 bench ./spacesd/filesvc 'UploadVerify256MiB|Sha256sumPlusCp256MiB' 2x

section "cua-bridge's transfer path (hash, send, verify, land) of 256 MiB each way vs sha256sum + cp of the same size, same run"
COUNT=2 bench ./bridge/transfer 'Upload256MiB|Download256MiB|Sha256sumPlusCp256MiB' 2x

section "idle RSS of cua-spacesd (target <= 12 MB; the leanest peer idles at 12 MB, not measured here) and binary size"
COUNT=1 bench ./spacesd 'IdleFootprint' 1x

section "RSS and open descriptors of cua-spacesd idle vs while 3000 sockets that asked GET /health once stay open (main held all 3000: 67 MB, 3010 fds)"
COUNT=1 bench ./spacesd 'IdleSocketsFootprint' 1x
ls -l bin/cua-spacesd | awk '{printf "bin/cua-spacesd %d bytes\n", $5}'

section "space_bash true through cua-bridge MCP over streamable HTTP (target median <= 3 ms) vs direct spacesd exec, same run"
COUNT=2 bench ./bridge/mcp 'MCPSpaceBashTrue' 1000x
COUNT=2 bench ./spacesd/procsvc 'ExecTrueHTTP' 1000x

section "exec true on a Space serving TLS (pinned) through the bridge's registry: its one client per Space (one handshake, then a warm connection) vs a client built per call (a TLS handshake each, as before), same run"
COUNT=2 bench ./bridge/registry 'TLSSpaceExec' 200x

section "through cua-relay vs direct to the Space over TLS, same run: exec true (target: the relay adds <= 1 ms at p50), PTY echo round trip, PTY echo p99 idle vs during a 256 MiB download through the relay (target <= 20 ms), 256 MiB download (target: relay >= 40 % of direct)"
COUNT=1 bench ./test/relay 'RelayExecTrue|RelayPTYEcho$' 500x
COUNT=1 bench ./test/relay 'RelayPTYEchoDuringDownload' 300x
COUNT=1 bench ./test/relay 'RelayDownload256MiB' 3x

section "the daemon's check of a caller, same run: a direct call's token (sha256 + constant-time compare) vs a relayed stream's grant (ed25519 verify + role, once per stream) vs the role check alone (each later call on a pooled relayed stream)"
bench ./spacesd/server 'GrantCheck' 20000x

section "unshare (the relay's DELETE) to the end of a shared editor's live PTY (a WebSocket through the relay) and of a shared viewer's live stream (a WHEP viewer through the relay), median of 5 (target <= 500 ms)"
COUNT=1 bench ./test/relay 'UnshareEnds' 5x

section "relay nodes in a cluster (three in one process, NATS routes on loopback, real TLS): exec true and a PTY's echo on a real Space attached to node b, its owner through b vs through node a (target: the hop adds <= 1 ms at p50); with a stand-in Space on node b, a call's round trip on a pooled stream through node a (the cross-node hop over the NATS trunk) vs straight to b (target: the hop adds <= 1 ms at p50); a 256 MiB download through a vs from b; unshare on a to the end of a viewer's stream held through c (target <= 500 ms)"
COUNT=1 bench ./test/relay 'ClusterExecTrue' 500x
COUNT=1 bench ./relay/relayd 'ClusterCall' 500x
COUNT=2 bench ./relay/relayd 'ClusterDownload256MiB' 2x
COUNT=1 bench ./relay/relayd 'ClusterUnshareToEnd' 30x

section "a stream through cua-relay vs direct to the Space, same run, 1280x720, Go receiver, 3 rounds each: first frame from the viewer's first request, glass-to-glass p50/p95; media direct through the relay's HTTPS, and relayed by its TURN (relay-only on both ends, UDP) (targets: TURN adds <= 100 ms to the first frame, <= 5 ms to glass-to-glass p50)"
COUNT=1 bench ./test/relay 'RelayStreamTURN' 1x

section "idle attached computers per GiB of relay RSS (target >= 10,000 on each node): ${CUA_BENCH_ATTACHERS:-10000} simulated Spaces in the test process (the daemon's redial policy), RSS from /proc; one relay process, then the time from its restart to all of them attached again; beside it, same run, three relay processes clustered on loopback (NATS routes, the mesh key), the Spaces registered through each in turn and given every node's URL: RSS and KiB per computer on each node, then one node killed (SIGKILL) and the time until all of its Spaces are attached again on the other two"
$GO test -run '^$' -bench 'RelayIdleAttachers|ClusterIdleAttachers' -benchtime 1x -count 1 -timeout 60m ./test/relay 2>&1 \
	| grep -E '^(attachers |Benchmark|---|FAIL|panic)' || true

section "1920x1080 screenshot of a desktop-like picture in the daemon: scaled to 1280 as JPEG (target median <= 15 ms) and PNG, beside full size (JPEG target <= 25 ms) and the raw captures they start from (Xvfb)"
bench ./capabilities/desktop 'Screenshot' 1s

section "the scale of a screenshot alone: 1920x1080 BGRX to 1280x720 (area average, media/scale), to BGRX for JPEG and RGBA for PNG, on every core and on one"
COUNT=2 bench ./media/scale 'Scale1080p' 1s
$GO test -run '^$' -bench 'Scale1080p' -benchtime 1s -count 1 -cpu 1 ./media/scale 2>&1 | grep -E '^Benchmark' || true

section "an agent's step through cua-bridge (SDK client; stdio and streamable HTTP): JPEG screenshot scaled to 1280 + click (target median <= 25 ms), each half alone, beside a bare space_bash true, same run"
COUNT=1 bench ./bridge/mcp 'MCPAgentStep' 100x

section "computer-server's bus beside the daemon's own API, one daemon and one 1920x1080 desktop-like display: run_command true over /ws vs POST /v1/exec, and a full-size PNG screenshot (base64 in JSON over /ws) vs GET /v1/screenshot"
bench ./spacesd/compatsvc 'BusVsAPI' 200x

section "input latency: click call to the ButtonPress a test X client receives"
bench ./capabilities/desktop 'InputLatency' 1s

section "1920x1080 JPEG encode at quality 80: media/jpegenc (parallel bands, from RGBA and BGRX) vs image/jpeg on the same frame"
bench ./media/jpegenc 'Encode1080p' 1s

# The stream's CPU comparison is ffmpeg's x11grab + libvpx (DESIGN §5).
need ffmpeg ffmpeg stream
# The stream's figures before and after the work of issue 27: the same
# benchmark against the daemon built from BENCH_BEFORE (a commit; default
# main as it was when that work began), then against bin/cua-spacesd.
BENCH_BEFORE=${BENCH_BEFORE:-4f5ae8f}
before_bin=""
if git rev-parse -q --verify "$BENCH_BEFORE^{commit}" >/dev/null 2>&1; then
	before_dir=$(mktemp -d)
	trap 'rm -rf "$before_dir"' EXIT
	if git archive "$BENCH_BEFORE" | tar -x -C "$before_dir" && (cd "$before_dir" && make build GO="$GO" >/dev/null 2>&1); then
		before_bin="$before_dir/bin/cua-spacesd"
	else
		echo "bench: the daemon of $BENCH_BEFORE did not build; no before figures"
	fi
else
	echo "bench: $BENCH_BEFORE is not a commit of this clone; no before figures"
fi
stream_bench() { # stream_bench LABEL [BIN]
	STREAM_BENCH_BIN=${2:-} $GO test -run '^$' -bench 'Stream1280x720$|Stream1920x1080$' -benchtime 1x -count 1 ./spacesd/streamsvc 2>&1 \
		| grep -E '^(stream |Benchmark|---|FAIL|panic)' | sed "s/^stream /stream ($1) /" || true
}
section "desktop stream (a cua-spacesd process, Xvfb, a pion viewer decoding every frame) at 1280x720 and 1920x1080, each figure beside its DESIGN §5 target; the CPU comparison (ffmpeg x11grab + libvpx on the same scrolling xterm) measured in the same run; first the daemon of $BENCH_BEFORE (before), then bin/cua-spacesd (after). The first frame: the median of 5 streams started one after the other, with where its time went (the daemon's account from GET /v1/stream/sessions; the before build gives none)"
[ -n "$before_bin" ] && stream_bench before "$before_bin"
stream_bench after
bench ./media/vp8 'Encode' 30x
bench ./media/yuv 'Convert1080p' 1s

# The sound's figures (issue 28) need a PulseAudio of their own.
need pulseaudio pulseaudio sound
need paplay pulseaudio-utils sound
sound_bench() { # sound_bench REGEX: the lines a sound benchmark prints
	$GO test -run '^$' -bench "$1" -benchtime 1x -count 1 ./spacesd/streamsvc 2>&1 \
		| grep -E '^(stream |Benchmark|---|FAIL|panic|\s+\w+_test\.go:)' | grep -v ', round [0-9]*:' || true
}
section "desktop stream at 1920x1080 with the sound on (issue 28: the viewers ask for audio=1, a private PulseAudio plays a tone throughout, the daemon captures it and encodes Opus) beside the same without it, same run: issue 27's figures again (first frame, fps and CPU under motion, CPU idle, glass-to-glass, keyframes)"
sound_bench 'Stream1920x1080$|Stream1920x1080Audio$'
section "A/V sync (issue 28): a cua-spacesd process streams 1920x1080 Xvfb and its PulseAudio's sound to a pion receiver that decodes both; the screen flashes white and a click plays at the same instants, 20 times; the skew between the flash in the video and the click in the audio, each placed on the sender's clock by its RTP timestamps and the RTCP sender reports, the test program's own audio latency (its click on the sink's monitor, measured first) taken out (target p50 within ±20 ms, p95 within ±40 ms; Cua's own ~9 ms)"
sound_bench 'StreamAVSync$'
section "the daemon's CPU for the sound (issue 28), one daemon, same run: the video alone (one viewer) on a still screen and under motion (a scrolling xterm), then one viewer with the sound while the sink plays silence (every 20 ms frame captured and encoded, DTX sending few) and while it plays a tone (every frame sent)"
sound_bench 'StreamAudioCPU$'

section "the accessibility tree (issue 29): a GTK 3 window with 1,000 buttons more on a private accessibility bus, its tree read over AT-SPI (time and the size of its JSON answer), beside a PNG and a JPEG screenshot of the same window, same run"
COUNT=1 $GO test -run '^$' -bench 'Tree1000' -benchtime 3x ./capabilities/a11y 2>&1 | grep -E '^(a11y|Benchmark|---|FAIL|panic)' || true

# The viewer page's figures are Chromium's own (Debian's, as CI runs it).
need chromium chromium "viewer page"
section "the viewer page in headless Chromium (a daemon process streaming 1920x1080 Xvfb to the page): glass-to-glass p50 and p95 (requestVideoFrameCallback and a canvas read of a patch painted at a known time, to the frame handed to the compositor; target p50 <= 60 ms at 1080p) and input-to-photon p50 (a key pressed in the page, drawn by xterm, seen changed on the page; target <= 35 ms), each beside its target, with Chromium's own share of a frame; then the same Space's link through cua-relay with the media relayed by its TURN (?ice=relay; target: TURN adds <= 5 ms to glass-to-glass p50 on loopback), same run"
$GO test -run '^$' -bench 'ViewerChromium' -benchtime 1x -count 1 ./test/browser 2>&1 \
	| grep -E '^(viewer |Benchmark|---|FAIL|panic|\s+\w+_test\.go:)' || true
