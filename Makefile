# Switchboard. `make help` lists the targets.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X switchboard/internal/app.Version=$(VERSION)

.PHONY: help build build-native run test test-js test-short lint vet fmt bench-api bench-gateway bench-voice bench-bargein bench-voicemail bench-recovery bench-scheduler bench-overview bench-sip bench-twilio fuzz clean

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/switchboard
	@./scripts/ensure-deps.sh
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/switchboard ./cmd/switchboard

build-native: ## build bin/switchboard with the native offline speech engines (espeak-ng, pocketsphinx)
	@./scripts/ensure-deps.sh speech
	CGO_ENABLED=1 $(GO) build -tags speech_native -trimpath -ldflags "$(LDFLAGS)" -o bin/switchboard ./cmd/switchboard

# run installs the offline speech packages when it can (root or password-less
# sudo) and builds with them when they are present; otherwise, or if that
# build fails, it builds the pure-Go server, which starts anyway and logs
# which speech providers it lacks.
run: ## install the speech packages if it can, build with them if present, serve on SQLite + sandbox (prints the first key)
	@./scripts/ensure-deps.sh
	@./scripts/speech-deps.sh --if-possible
	@if ./scripts/speech-deps.sh --native && \
		CGO_ENABLED=1 $(GO) build -tags speech_native -trimpath -ldflags "$(LDFLAGS)" -o bin/switchboard ./cmd/switchboard; then \
		echo "run: built with the native speech engines (-tags speech_native)"; \
	else \
		echo "run: building without the native speech engines; the server logs which speech providers it lacks"; \
		CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/switchboard ./cmd/switchboard; \
	fi
	./bin/switchboard serve

# -parallel 4: most end-to-end tests of internal/app and cmd/switchboard
# wait on real time (a ring, a persona's answer, a lease running out) more
# than they compute, so four of a package run at once on two cores; each
# is written to pass on a loaded machine. -p 4: for the same reason four
# packages' tests run at once (go test's default is one per core): the
# small packages' waits overlap internal/app's instead of queueing behind
# it (the whole go test, warm cache, 2 cores: 585 s at -p 2, 479 s at -p 4).
# -gcflags modernc.org/...=-race=false: the SQLite driver is C transpiled
# to Go, and instrumenting it for the race detector made every SQLite test
# 3-4 times the CPU (internal/store/sqlite: 107 s of CPU, 25 s without) for
# races in code that is not ours; our packages stay instrumented, as cgo
# code is never (a race between our code and the driver's on one buffer
# goes unseen, as it would with a cgo driver). A test that counts the process's
# goroutines does not call t.Parallel and runs alone, before the others.
# -timeout 20m: a package's limit, not the run's; internal/app is CPU-bound
# under -race and took over 12 min beside a CPU hog (yes > /dev/null).
test: ## go vet + make lint + go test -race on SQLite and PostgreSQL, with the native speech engines, the SIP peers and chromium (what CI runs)
	@./scripts/ensure-deps.sh test
	$(GO) vet -tags speech_native ./...
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory test-js
	SWITCHBOARD_TEST_POSTGRES="$${SWITCHBOARD_TEST_POSTGRES:-$$(./scripts/ensure-postgres.sh)}" \
		SWITCHBOARD_REQUIRE_SIP=1 SWITCHBOARD_REQUIRE_BROWSER=1 SWITCHBOARD_SCREENSHOTS=1 CGO_ENABLED=1 $(GO) test -tags speech_native -race -gcflags='modernc.org/...=-race=false' -count=1 -p 4 -parallel 4 -timeout 20m ./...

# The web widget's JavaScript unit tests (resampler, jitter buffer,
# protocol) on node's built-in runner. Node is for these tests only: the
# server serves web/widget as committed, so make run needs no Node.js.
test-js: ## the web widget's JavaScript unit tests (node --test web/widget/test/)
	@./scripts/ensure-deps.sh test-js
	node --test web/widget/test/*.test.mjs

test-short: ## unit tests only, no PostgreSQL; the pure-Go build (tests that need the speech engines skip)
	$(GO) test -short ./...

# The linters, and why each is on, are in .golangci.yml; the pinned
# golangci-lint is installed into ./bin by scripts/ensure-deps.sh. It may
# run beside another checkout's (CI next to a session): without
# --allow-parallel-runners the second one fails on golangci-lint's lock.
lint: ## golangci-lint (.golangci.yml) over the speech_native build
	@./scripts/ensure-deps.sh lint
	CGO_ENABLED=1 ./bin/golangci-lint run --allow-parallel-runners ./...

fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')

bench-api: ## REST listing benchmark over 1,000,000 calls vs a bare handler; writes docs/benchmarks.md
	$(GO) run ./internal/bench/cmd/benchapi -calls 1000000 -out docs/benchmarks.md

clean: ## remove build output
	rm -rf bin

fuzz: ## fuzz every parser of untrusted input (REST bodies, gateway frames, flows, SSE) for a while each
	$(GO) test -run '^$$' -fuzz FuzzRequests -fuzztime 60s ./internal/app/
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 30s ./internal/gateway/protocol/
	$(GO) test -run '^$$' -fuzz FuzzSession -fuzztime 30s ./internal/gateway/
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./internal/flow/
	$(GO) test -run '^$$' -fuzz FuzzReader -fuzztime 20s ./internal/llm/sse/
	$(GO) test -run '^$$' -fuzz FuzzDecoder -fuzztime 30s ./internal/audio/
	$(GO) test -run '^$$' -fuzz FuzzEndpointer -fuzztime 20s ./internal/audio/vad/
	$(GO) test -run '^$$' -fuzz FuzzReadWAVHeader -fuzztime 20s ./internal/speech/local/
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 20s ./internal/speech/cloud/deepgram/
	$(GO) test -run '^$$' -fuzz FuzzPipelineWrite -fuzztime 20s ./internal/voice/
	$(GO) test -run '^$$' -fuzz FuzzAudioFrames -fuzztime 20s ./internal/gateway/
	$(GO) test -run '^$$' -fuzz FuzzFrames -fuzztime 20s ./internal/audio/amd/

bench-gateway: ## 1,000 concurrent text-mode web calls through a flow; writes docs/benchmarks.md
	$(GO) run ./internal/bench/cmd/benchgateway -calls 1000 -out docs/benchmarks.md

bench-voice: ## voice pipeline: platform share of a turn, concurrent audio calls by frame lateness, calls on the local engines; writes docs/benchmarks.md
	@./scripts/ensure-deps.sh speech
	CGO_ENABLED=1 $(GO) run -tags speech_native ./internal/bench/cmd/benchvoice -out docs/benchmarks.md

bench-bargein: ## barge-in on the local engines in real time: espeak-ng callers interrupt (or say "uh-huh") over the assistant, web and phone lines; prints the figures for docs/benchmarks.md
	@./scripts/ensure-deps.sh speech
	SWITCHBOARD_BENCH_BARGEIN=1 CGO_ENABLED=1 $(GO) test -tags speech_native -run '^TestBargeInLocal$$' -count=1 -v ./internal/voice/

bench-voicemail: ## voicemail detection on a labelled set of espeak-ng people and voicemail greetings over μ-law, with the local recognizer; writes docs/benchmarks.md
	@./scripts/ensure-deps.sh speech
	CGO_ENABLED=1 $(GO) run -tags speech_native ./internal/bench/cmd/benchvoicemail -out docs/benchmarks.md

bench-recovery: ## crash recovery of scheduled calls: SIGKILL a node holding dial jobs, restart it or keep a survivor (SQLite, PostgreSQL); writes docs/benchmarks.md
	$(GO) run ./internal/bench/cmd/benchrecovery -postgres "$$(./scripts/ensure-postgres.sh)" -out docs/benchmarks.md

bench-scheduler: ## 10,000 scheduled attempts due at one instant: one node on SQLite, three nodes on one PostgreSQL; dial lateness, lost, doubled; writes docs/benchmarks.md
	$(GO) run ./internal/bench/cmd/benchscheduler -postgres "$$(./scripts/ensure-postgres.sh)" -out docs/benchmarks.md

bench-overview: ## the dashboard's overview over 1,000,000 calls (Zipf-sized orgs and assistants, 180 days) on SQLite and PostgreSQL: store and page p50/p95/p99; writes docs/benchmarks.md
	$(GO) run ./internal/bench/cmd/benchoverview -calls 1000000 -postgres "$$(./scripts/ensure-postgres.sh)" -out docs/benchmarks.md

bench-sip: ## concurrent SIP calls to SIPp (-rtp_echo) on loopback, 25 to 400, by outbound frame lateness, loss and CPU per call, vs bare pacers; writes docs/benchmarks.md
	@./scripts/ensure-deps.sh sip
	$(GO) run ./internal/bench/cmd/benchsip -out docs/benchmarks.md

bench-twilio: ## concurrent Twilio Media Streams calls to the fake Twilio on loopback, 25 to 400, by outbound frame lateness, marks and CPU per call, vs bare pacers; writes docs/benchmarks.md
	$(GO) run ./internal/bench/cmd/benchtwilio -out docs/benchmarks.md
