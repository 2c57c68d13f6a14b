#!/bin/sh
# Runs the Node tests of cua-bridge: `make build` must have built bin/ first
# (the Makefile's test target does). Installs the pinned packages from the
# lockfile when they are missing. Extra arguments go to `node --test`
# (e.g. --test-name-pattern=conformance).
set -eu
cd "$(dirname "$0")"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
	npm ci --no-audit --no-fund
fi
exec node --test --test-reporter=spec --test-concurrency=1 "$@" ./*.test.mjs
