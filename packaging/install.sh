#!/bin/sh
# Install cua-spacesd as a service: the binary, a fresh token (0600) and the
# systemd unit (Linux) or launchd agent (macOS).
#   sudo packaging/install.sh [RELEASE-DIR | path/to/cua-spacesd]
# A release directory (make release's dist/, or the downloaded binaries with
# their SHA256SUMS) gives cua-spacesd-<os>-<arch> for this machine (uname -s,
# uname -m), checked against SHA256SUMS before anything is installed. The
# default is dist/ when it exists, else bin/cua-spacesd (make build).
# CUA_INSTALL_CHECK_ONLY=1 picks and checks the binary, prints its path and
# installs nothing.
set -eu
src=${1:-}
if [ -z "$src" ]; then
	if [ -d dist ]; then src=dist; else src=bin/cua-spacesd; fi
fi
here=$(cd "$(dirname "$0")" && pwd)

# release_binary DIR: the path of this machine's cua-spacesd in a release
# directory, once its checksum matches.
release_binary() {
	case "$(uname -s)" in
	Linux) os=linux ;;
	Darwin) os=darwin ;;
	*) echo "install.sh: no release binary for $(uname -s)" >&2; exit 1 ;;
	esac
	case "$(uname -m)" in
	x86_64 | amd64) arch=amd64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) echo "install.sh: no release binary for $(uname -m)" >&2; exit 1 ;;
	esac
	name=cua-spacesd-$os-$arch
	[ -f "$1/$name" ] || { echo "install.sh: $1 has no $name for this machine" >&2; exit 1; }
	[ -f "$1/SHA256SUMS" ] || { echo "install.sh: $1 has no SHA256SUMS to check $name against; not installed" >&2; exit 1; }
	line=$(grep "  $name\$" "$1/SHA256SUMS") || { echo "install.sh: $1/SHA256SUMS does not name $name; not installed" >&2; exit 1; }
	if command -v sha256sum >/dev/null 2>&1; then check="sha256sum -c -"; else check="shasum -a 256 -c -"; fi
	(cd "$1" && printf '%s\n' "$line" | $check >/dev/null 2>&1) || {
		echo "install.sh: $1/$name does not match its SHA256SUMS (a broken or altered download); not installed" >&2
		exit 1
	}
	echo "$1/$name"
}

if [ -d "$src" ]; then
	bin=$(release_binary "$src")
else
	bin=$src
fi
[ -x "$bin" ] || { echo "install.sh: $bin is not an executable (run make release or make build first)" >&2; exit 1; }
# A binary for another machine, or a truncated one, fails here rather than
# in the service manager's restart loop.
"$bin" version >/dev/null || { echo "install.sh: $bin does not run on this machine" >&2; exit 1; }
if [ "${CUA_INSTALL_CHECK_ONLY:-}" = 1 ]; then
	echo "$bin"
	exit 0
fi

new_token() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }

case "$(uname -s)" in
Linux)
	[ "$(id -u)" = 0 ] || { echo "install.sh: run as root on Linux" >&2; exit 1; }
	install -m 0755 "$bin" /usr/local/bin/cua-spacesd
	install -d -m 0700 /etc/cua-spacesd /var/lib/cua-spacesd
	if [ ! -s /etc/cua-spacesd/token ]; then
		(umask 077; new_token > /etc/cua-spacesd/token)
	fi
	install -m 0644 "$here/systemd/cua-spacesd.service" /etc/systemd/system/cua-spacesd.service
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		systemctl daemon-reload
		systemctl enable --now cua-spacesd
	else
		echo "install.sh: no running systemd; start it with: cua-spacesd serve --token-file /etc/cua-spacesd/token"
	fi
	echo "installed; token in /etc/cua-spacesd/token; check with: cua-spacesd doctor --token-file /etc/cua-spacesd/token"
	;;
Darwin)
	install -m 0755 "$bin" /usr/local/bin/cua-spacesd
	mkdir -p /usr/local/etc/cua-spacesd
	if [ ! -s /usr/local/etc/cua-spacesd/token ]; then
		(umask 077; new_token > /usr/local/etc/cua-spacesd/token)
	fi
	agents="$HOME/Library/LaunchAgents"
	mkdir -p "$agents"
	cp "$here/launchd/com.trycua.spacesd.plist" "$agents/"
	launchctl bootout "gui/$(id -u)/com.trycua.spacesd" 2>/dev/null || true
	launchctl bootstrap "gui/$(id -u)" "$agents/com.trycua.spacesd.plist"
	echo "installed; token in /usr/local/etc/cua-spacesd/token"
	;;
*)
	echo "install.sh: unsupported OS $(uname -s)" >&2; exit 1 ;;
esac
