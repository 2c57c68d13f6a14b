#!/bin/sh
# make run: a local Space and the bridge serving MCP, on loopback, with
# fresh tokens in a throwaway CUA_HOME. Ctrl-C stops both.
#   SPACESD_PORT (3211) and BRIDGE_PORT (3210) pick other ports.
# With RELAY=1 (make run-relay), a local cua-relay too (RELAY_PORT, 3213):
# the Space dials out to it, and the bridge reaches it as relay:local.
set -eu
cd "$(dirname "$0")/.."
spacesd_port=${SPACESD_PORT:-3211}
bridge_port=${BRIDGE_PORT:-3210}
state=$(mktemp -d "${TMPDIR:-/tmp}/cua-run.XXXXXX")
export CUA_HOME="$state/cua-home"
mkdir -p "$CUA_HOME"
umask 077
od -An -N32 -tx1 /dev/urandom | tr -d ' \n' > "$state/spacesd.token"
od -An -N32 -tx1 /dev/urandom | tr -d ' \n' > "$state/bridge.token"

pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$state"
}
trap cleanup EXIT INT TERM

relay_port=${RELAY_PORT:-3213}
ports="$spacesd_port $bridge_port"
[ -n "${RELAY:-}" ] && ports="$ports $relay_port"
for port in $ports; do
	if curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null; then
		echo "make run: port $port is already in use (another make run?); pick others with SPACESD_PORT=... BRIDGE_PORT=..." >&2
		exit 1
	fi
done

# A desktop too when the machine can give one: the daemon starts its own
# Xvfb when no DISPLAY is set and Xvfb is installed.
xvfb_flag=""
if [ -z "${DISPLAY:-}" ] && command -v Xvfb >/dev/null 2>&1 && bin/cua-spacesd serve -h 2>&1 | grep -q -- '-xvfb'; then
	xvfb_flag="--xvfb"
fi
bin/cua-spacesd serve --listen "127.0.0.1:$spacesd_port" --token-file "$state/spacesd.token" \
	--state-dir "$state/spacesd" $xvfb_flag 2>"$state/spacesd.log" &
spacesd_pid=$!
pids="$pids $spacesd_pid"

# Wait for the daemon to answer its health check instead of guessing a delay.
i=0
until curl -fsS "http://127.0.0.1:$spacesd_port/health" >/dev/null 2>&1; do
	i=$((i+1))
	if [ $i -ge 100 ] || ! kill -0 "$spacesd_pid" 2>/dev/null; then
		echo "cua-spacesd did not start:"; cat "$state/spacesd.log"; exit 1
	fi
	sleep 0.1
done

bin/cua-bridge space add local "http://127.0.0.1:$spacesd_port" --token-file "$state/spacesd.token" >/dev/null

relay_note=""
if [ -n "${RELAY:-}" ]; then
	# A relay with a self-signed certificate, one user, and the Space
	# published on it: the bridge pins the fingerprint the relay printed.
	bin/cua-relay serve --listen "127.0.0.1:$relay_port" --data-dir "$state/relay" --tls-self-signed \
		>"$state/relay.out" 2>"$state/relay.log" &
	relay_pid=$!
	pids="$pids $relay_pid"
	i=0
	until curl -ksf "https://127.0.0.1:$relay_port/health" >/dev/null 2>&1; do
		i=$((i+1))
		if [ $i -ge 100 ] || ! kill -0 "$relay_pid" 2>/dev/null; then
			echo "cua-relay did not start:"; cat "$state/relay.log"; exit 1
		fi
		sleep 0.1
	done
	fingerprint=$(grep -o 'sha256:[0-9a-f]*' "$state/relay.out" | head -n 1)
	bin/cua-relay user add me --data-dir "$state/relay" >/dev/null
	bin/cua-relay token create me --data-dir "$state/relay" >"$state/relay-user.token" 2>/dev/null
	bin/cua-bridge relay login --url "https://127.0.0.1:$relay_port" --token-file "$state/relay-user.token" \
		--fingerprint "$fingerprint" >/dev/null
	bin/cua-bridge relay register local >/dev/null
	relay_note="
and cua-relay on 127.0.0.1:$relay_port (fingerprint $fingerprint): the Space dialled out to
it, and the bridge reaches it as relay:local too:  CUA_HOME=$CUA_HOME bin/cua-bridge exec relay:local -- uname -a
"
fi
bin/cua-bridge serve --listen "127.0.0.1:$bridge_port" --token-file "$state/bridge.token" 2>"$state/bridge.log" &
bridge_pid=$!
pids="$pids $bridge_pid"
i=0
until curl -s -o /dev/null "http://127.0.0.1:$bridge_port/mcp" 2>/dev/null; do
	i=$((i+1))
	if [ $i -ge 100 ] || ! kill -0 "$bridge_pid" 2>/dev/null; then
		echo "cua-bridge did not start:"; cat "$state/bridge.log"; exit 1
	fi
	sleep 0.1
done

token=$(cat "$state/bridge.token")
cat <<MSG
A local Space "local" (cua-spacesd on 127.0.0.1:$spacesd_port) is registered, and
cua-bridge serves MCP over streamable HTTP:

  MCP URL:  http://127.0.0.1:$bridge_port/mcp
  token:    $token
  CUA_HOME: $CUA_HOME   (logs: $state/*.log)

Try it:
  curl -s http://127.0.0.1:$bridge_port/mcp -H 'Authorization: Bearer $token' -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}'
or, with the same CUA_HOME:  CUA_HOME=$CUA_HOME bin/cua-bridge exec local -- uname -a

$relay_note
Ctrl-C stops them all.
MSG

# The MCP host config for this bridge: paste-ready, so with the
# token, which this throwaway setup prints above anyway.
echo
echo "MCP host config (bin/cua-bridge mcp-config --http --listen 127.0.0.1:$bridge_port --token-file $state/bridge.token --show-token;"
echo "add --client claude-code, cursor, vscode or codex for those hosts):"
bin/cua-bridge mcp-config --http --listen "127.0.0.1:$bridge_port" --token-file "$state/bridge.token" --show-token 2>/dev/null
wait
