#!/bin/sh
# make release VERSION=v1.2.3 [DIST=dist]: the release binaries and their
# SHA256SUMS, byte for byte the same wherever and however often they are
# built from the same sources:
#   cua-spacesd-linux-{amd64,arm64}   static, with the VP8 and Opus
#                                     encoders (cgo, Debian's libvpx.a and
#                                     libopus.a for that arch)
#   cua-spacesd-darwin-{amd64,arm64}  CGO_ENABLED=0: no encoder, and they
#                                     say so (capabilities, doctor)
#   cua-bridge-{linux,darwin}-{amd64,arm64}   CGO_ENABLED=0, static
#   cua-relay-{linux,darwin}-{amd64,arm64}    CGO_ENABLED=0, static
# The linux binaries of the other arch need Debian's cross compiler and
# that arch's libvpx-dev and libopus-dev through multiarch (.ci/run
# installs them for arm64 on amd64). A missing one stops the release
# before anything is built: a release never leaves an encoder out quietly.
#
# What makes the bytes reproducible: the Go toolchain of go.mod (not
# whichever go is on PATH); -trimpath, -buildvcs=false (the version is
# what -X stamps, not the state of a checkout) and an empty Go build id;
# GOAMD64, GOARM64, GOFLAGS and the C flags (Go's default -O2 -g) fixed
# whatever the environment says; and in the cgo link no symbols or debug
# info (-s) and no GNU build id (--build-id=none), so no path or time of
# the build machine gets in. DIST is relative to the repository.
set -eu
export LC_ALL=C

GO=${GO:-go}
: "${VERSION:?give the version: make release VERSION=v1.2.3}"
: "${DIST:=dist}"
DIST=${DIST%/}
case $VERSION in
*[!A-Za-z0-9._+-]* | -*)
	echo "release: VERSION=$VERSION: use letters, digits and . _ + - only (it names the release in every binary)" >&2
	exit 2
	;;
esac
cd "$(dirname "$0")/.."

# The toolchain go.mod names (its toolchain line, else its go line): the
# go command switches to it, downloading it once if it is not this one.
toolchain=$(awk '$1 == "toolchain" { t = $2 } $1 == "go" { g = "go" $2 } END { print (t != "" ? t : g) }' go.mod)
export GOTOOLCHAIN="$toolchain"
# Nothing of the caller's environment changes the bytes.
export GOFLAGS= GOAMD64=v1 GOARM64=v8.0 GOEXPERIMENT= CGO_CFLAGS="-O2 -g" CGO_CPPFLAGS= CGO_LDFLAGS= CGO_CXXFLAGS=
unset GOARM GO386 2>/dev/null || true

programs="spacesd:cua-spacesd bridge:cua-bridge relay:cua-relay"
targets="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"
hostarch=$($GO env GOHOSTARCH)

# triple is Debian's multiarch name (and cross compiler prefix) of a
# linux arch.
triple() {
	case $1 in
	amd64) echo x86_64-linux-gnu ;;
	arm64) echo aarch64-linux-gnu ;;
	*) echo "release: no Debian triple for $1" >&2; exit 2 ;;
	esac
}

# ccfor is the C compiler of a linux arch: CC_<arch> if set, this
# machine's gcc for its own arch, else Debian's cross compiler.
ccfor() {
	eval "cc=\${CC_$1:-}"
	if [ -z "$cc" ]; then
		if [ "$1" = "$hostarch" ]; then cc=gcc; else cc=$(triple "$1")-gcc; fi
	fi
	echo "$cc"
}

# Check every linux encoder build can happen before building anything.
missing=
for t in $targets; do
	os=${t%/*} arch=${t#*/}
	[ "$os" = linux ] || continue
	cc=$(ccfor "$arch")
	tr=$(triple "$arch")
	command -v "$cc" >/dev/null 2>&1 || missing="$missing
  $t: the C compiler $cc (Debian: gcc for the machine's own arch, gcc-$tr for another, with libc6-dev-$arch-cross)"
	[ -f /usr/include/vpx/vpx_encoder.h ] && [ -f "/usr/lib/$tr/libvpx.a" ] || missing="$missing
  $t: /usr/lib/$tr/libvpx.a and the vpx headers (Debian: libvpx-dev:$arch; for another arch first dpkg --add-architecture $arch)"
	[ -f /usr/include/opus/opus.h ] && [ -f "/usr/lib/$tr/libopus.a" ] || missing="$missing
  $t: /usr/lib/$tr/libopus.a and the opus headers (Debian: libopus-dev:$arch; for another arch first dpkg --add-architecture $arch)"
done
if [ -n "$missing" ]; then
	echo "release: the linux binaries are built with the VP8 and Opus encoders, and this machine lacks:$missing" >&2
	echo "(.ci/run installs all of it on Debian 12)" >&2
	exit 1
fi

# Build into a fresh directory beside DIST and move it into place at the
# end: a failed release leaves no mix of old and new binaries.
out="$DIST.tmp"
rm -rf "$out"
mkdir -p "$out"
ldflags="-s -w -buildid= -X main.version=$VERSION"
for t in $targets; do
	os=${t%/*} arch=${t#*/}
	for p in $programs; do
		pkg=${p%%:*} name=${p#*:}
		bin="$out/$name-$os-$arch"
		echo "release: $name $os/$arch"
		if [ "$os/$name" = linux/cua-spacesd ]; then
			# cgo for libvpx and libopus, linked statically; netgo and
			# osusergo keep glibc's resolver and user lookup (which a
			# static glibc cannot load) out of it.
			GOOS=$os GOARCH=$arch CGO_ENABLED=1 CC=$(ccfor "$arch") \
				$GO build -trimpath -buildvcs=false -tags netgo,osusergo \
				-ldflags "$ldflags -linkmode external '-extldflags=-static -Wl,--build-id=none'" \
				-o "$bin" "./$pkg"
		else
			GOOS=$os GOARCH=$arch CGO_ENABLED=0 \
				$GO build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$bin" "./$pkg"
		fi
	done
done

# Each linux cua-spacesd proves its encoders where this machine can run it
# (its own arch, or another through qemu-user): a release whose encoder
# fails its self-test (VP8's pictures or Opus's tones) is not written.
hostos=$($GO env GOHOSTOS)
for arch in amd64 arm64; do
	bin="$out/cua-spacesd-linux-$arch"
	case $arch in amd64) qemu=qemu-x86_64-static ;; arm64) qemu=qemu-aarch64-static ;; esac
	if [ "$hostos/$hostarch" = "linux/$arch" ]; then
		run=
	elif [ "$hostos" = linux ] && command -v "$qemu" >/dev/null 2>&1; then
		run=$qemu
	else
		echo "release: the self-test of cua-spacesd-linux-$arch is not run here (neither linux/$arch nor $qemu)"
		continue
	fi
	if ! log=$($run "$bin" selftest 2>&1); then
		printf '%s\n' "$log" >&2
		echo "release: cua-spacesd-linux-$arch failed its encoders' self-test; nothing was written to $DIST" >&2
		rm -rf "$out"
		exit 1
	fi
	echo "release: cua-spacesd-linux-$arch passed its encoders' self-test${run:+ (under $run)}"
done

(
	cd "$out"
	if command -v sha256sum >/dev/null 2>&1; then sha256sum cua-*; else shasum -a 256 cua-*; fi
) >"$out/SHA256SUMS"

rm -rf "$DIST"
mv "$out" "$DIST"
echo "release: $VERSION in $DIST/ ($($GO version | cut -d' ' -f3))"
cat "$DIST/SHA256SUMS"
