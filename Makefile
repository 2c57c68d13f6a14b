# One target per habit; CI calls the same ones (.ci/run -> make test).
GO       ?= go
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
BINARIES := cua-spacesd cua-bridge cua-relay
# go test through scripts/gotest: plain go test output, then which tests were
# skipped and why (a machine without Xvfb skips the desktop tests).
GOTEST   ?= GO=$(GO) $(GO) run ./scripts/gotest -race -count=1 -timeout 20m

.PHONY: build test test-browser test-relay test-release run run-relay bench cross lint fuzz clean

# cua-spacesd streams the desktop with libvpx and its sound with libopus
# (cgo, both or neither: one build has cgo or not). With a C compiler and
# Debian's libvpx-dev and libopus-dev (which ship libvpx.a and libopus.a)
# they are linked statically, so the binary still runs in any Linux guest
# with nothing installed; without them it is built without the encoders
# (desktop_stream and window_stream then report "built without a video
# encoder", desktop_audio "built without an audio encoder"). MEDIA=0 forces
# the latter.
CC       ?= cc
MEDIA    ?= $(shell [ "$$($(GO) env GOOS)" = linux ] && command -v $(CC) >/dev/null 2>&1 \
	&& [ -f /usr/include/vpx/vpx_encoder.h ] && ls /usr/lib/*/libvpx.a /usr/lib/libvpx.a 2>/dev/null | grep -q . \
	&& [ -f /usr/include/opus/opus.h ] && ls /usr/lib/*/libopus.a /usr/lib/libopus.a 2>/dev/null | grep -q . \
	&& echo 1 || echo 0)

build:
	@mkdir -p bin
ifeq ($(MEDIA),1)
	CGO_ENABLED=1 $(GO) build -trimpath -tags netgo,osusergo -ldflags '$(LDFLAGS) -linkmode external -extldflags -static' -o bin/cua-spacesd ./spacesd
else
	@echo "build: cua-spacesd without the video and audio encoders (no desktop_stream, window_stream, desktop_audio): MEDIA=0, or no C compiler, libvpx-dev and libopus-dev here"
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/cua-spacesd ./spacesd
endif
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/cua-bridge ./bridge
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/cua-relay ./relay

# test: every suite a person waits for (under 8 minutes on a 2-core machine).
# The heavier checks have targets of their own, which .ci/run also runs:
# test-browser (the viewer page in Chromium), test-relay (the cua-relay
# program and the relay end to end), cross, test-release.
RELAY_TESTS := ./relay ./relay/relayd ./relay/store ./test/relay
test: lint build
	$(GOTEST) $$($(GO) list ./... | grep -v -e '/test/browser$$' -e '/test/relay$$' -e '/relay$$' -e '/relay/relayd$$' -e '/relay/store$$')
	sh test/node/run.sh

# test-browser: the viewer page in headless Chromium (test/browser).
test-browser: build
	$(GOTEST) ./test/browser

# test-relay: the cua-relay program's tests (its store on JetStream, its
# server) and the relay end to end (test/relay): a real relay, Spaces and
# the bridge, with faults cut into the links. The shared relay packages
# (protocol, tunnel, relayapi) are in make test with their users.
test-relay: build
	$(GOTEST) $(RELAY_TESTS)

# test-release: make release twice, the second time from another directory
# with an empty build cache, and compare (packaging/release_test.go). Apart
# from make test because it takes minutes; .ci/run runs both.
test-release:
	CUA_TEST_RELEASE=1 $(GOTEST) -run '^TestRelease$$' ./packaging

# run: a local Space (cua-spacesd on loopback, fresh token) and the bridge
# serving MCP over streamable HTTP, registered in a throwaway CUA_HOME.
run: build
	@sh scripts/run.sh

# run-relay: the same, with a local cua-relay beside them: the Space dials
# out to it and the bridge reaches it as relay:local too.
run-relay: build
	@RELAY=1 sh scripts/run.sh

# bench: each figure beside its comparison from the same run.
bench: build
	@sh scripts/bench.sh

# fuzz: run every fuzz target for FUZZTIME each (the seed corpora also run
# in make test as ordinary tests).
FUZZTIME ?= 20s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# -trimpath as make release builds: the release check of make test then
# reuses these compiled packages (201 CPU-s of its first run down to 30).
cross:
	@for t in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do \
		echo "build $$t"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) build -trimpath -o /dev/null ./... || exit 1; \
	done

clean:
	rm -rf bin

# ---- release (issue 12) ----------------------------------------------------
# make release VERSION=v1.2.3 [DIST=dist]: cua-spacesd and cua-bridge for
# linux (static; cua-spacesd with the VP8 and Opus encoders, arm64 through
# Debian's cross compiler, libvpx-dev:arm64 and libopus-dev:arm64) and
# darwin (CGO_ENABLED=0), amd64 and
# arm64, with SHA256SUMS; the same bytes on every run (scripts/release.sh).
DIST ?= dist
.PHONY: release
release:
	@if [ "$(origin VERSION)" = file ]; then echo "release: give the version: make release VERSION=v1.2.3" >&2; exit 2; fi
	GO='$(call shq,$(GO))' VERSION='$(call shq,$(VERSION))' DIST='$(call shq,$(DIST))' sh scripts/release.sh
# shq escapes a value for single quotes in a recipe: the script, not the
# shell, then judges what a VERSION holds.
shq = $(subst ','\'',$(1))
