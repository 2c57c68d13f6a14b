#!/bin/sh
# Start the virtual desktop, then the daemon in the foreground so that the
# container lives and dies with it.
set -eu
Xvfb "$DISPLAY" -screen 0 "$SCREEN_GEOMETRY" -nolisten tcp &
# Wait for the X socket rather than sleeping a guessed time.
n=0
while [ ! -S "/tmp/.X11-unix/X${DISPLAY#:}" ] && [ $n -lt 100 ]; do n=$((n+1)); sleep 0.1; done
openbox &
exec cua-spacesd serve --listen 0.0.0.0:3211 "$@"
