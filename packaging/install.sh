#!/bin/sh
# Install cua-spacesd as a service: the binary, a fresh token (0600) and the
# systemd unit (Linux) or launchd agent (macOS).
#   sudo packaging/install.sh [path/to/cua-spacesd]
set -eu
bin=${1:-bin/cua-spacesd}
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$bin" ] || { echo "install.sh: $bin is not an executable (run make build first)" >&2; exit 1; }

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
