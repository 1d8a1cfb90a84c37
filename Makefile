# bureau — persistent Linux desktops for agents.
#   make run    set up the host, build or reuse the desktop image, migrate, serve
#   make test   unit tests (SQLite + PostgreSQL) and end-to-end tests on real desktops

SHELL := /bin/bash
export GOTOOLCHAIN := local
export PATH := /usr/local/go/bin:$(PATH)
# Caches live outside the checkout so a fresh clone reuses them.
export GOCACHE ?= /var/cache/bureau/go-build
export GOMODCACHE ?= /var/cache/bureau/go-mod

DATA_DIR ?= /var/lib/bureau
BIN := bin/bureau
E2E_TIMEOUT ?= 60m

.PHONY: run serve setup setup-test check build install image migrate test unit sdk-unit fuzz fuzz-short e2e e2e-sqlite e2e-postgres e2e-hosts browser-deps vet bench bench-short bench-proxy bench-typing bench-wake bench-backup bench-tls bench-density bench-webhooks typing-soak soak clean

run: setup build image migrate serve

serve:
	$(BIN) serve --data-dir $(DATA_DIR)

setup:
	@scripts/host-setup.sh

# setup, plus what only the tests need (Chromium, Node.js, Python).
setup-test:
	@BUREAU_SETUP_TESTS=1 scripts/host-setup.sh
	@scripts/weed-setup.sh >/dev/null
	@scripts/pebble-setup.sh >/dev/null
	@scripts/oidc-provider-setup.sh >/dev/null

# bureau, and bureau-agent (static, for the desktops) beside it.
build:
	go build -o $(BIN) ./cmd/bureau
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$$(git describe --always --dirty 2>/dev/null || echo dev)" -o bin/bureau-agent ./cmd/bureau-agent

# Installs bureau as a service (scripts/install.sh, docs/install.md): the
# binaries in $(PREFIX)/bin (/usr/local), the image recipe, the systemd
# unit and /etc/bureau/bureau.env (an existing one is kept: the new one is
# written beside it as bureau.env.new). DESTDIR stages the files;
# INSTALL_DEPS=1 also runs scripts/host-setup.sh.
install: build
	DESTDIR="$(DESTDIR)" PREFIX="$(or $(PREFIX),/usr/local)" INSTALL_DEPS="$(INSTALL_DEPS)" BUREAU_INSTALL_BIN_DIR="$(CURDIR)/bin" scripts/install.sh

# Builds debian-12-desktop from images/desktop, or reuses the image cached
# under /var/cache/bureau/images for the same recipe hash.
image: build
	$(BIN) image build --data-dir $(DATA_DIR)

migrate: build
	$(BIN) migrate --data-dir $(DATA_DIR)

# The inner loop: vet, gofmt and the unit tests, without root, VMs or
# PostgreSQL (its tests skip; make unit runs them). A few minutes.
check: vet
	go test -race ./...

vet:
	go vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }

test: setup-test vet unit fuzz-short image e2e bench-short

# PostgreSQL must start: without it its half of the tests would not run
# and go test would still say ok.
START_POSTGRES = url=$$(scripts/postgres-setup.sh) && test -n "$$url" || { echo "$@: PostgreSQL did not start (scripts/postgres-setup.sh failed or printed no URL); its tests would not run" >&2; exit 1; }

# The race detector runs where there is concurrency to check. The store has
# no goroutines or shared memory of its own (its concurrency is the
# database's, which the detector cannot see), and under it the store's tests
# took ~150 s of this stage's ~7 minutes here (modernc's SQLite is C
# translated to Go, slow under the detector): they run without it.
NO_RACE = github.com/bureau/bureau/internal/store
unit: sdk-unit
	$(START_POSTGRES); \
	export BUREAU_REQUIRE_POSTGRES=1 BUREAU_TEST_POSTGRES_URL="$$url"; \
	go test -race -count=1 $$(go list ./... | grep -vxF '$(NO_RACE)') && go test -count=1 $(NO_RACE)

# The SDKs' offline tests (a fake server, the committed spec); their live tests run in e2e.
sdk-unit: setup-test
	cd sdk/python && PYTHONDONTWRITEBYTECODE=1 $$(test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3) -m unittest
	cd sdk/typescript && { test -d node_modules/typescript -a -d node_modules/yaml || npm ci --no-audit --no-fund; } && npm run build && npm test

# Every fuzz target for a bounded time (FUZZTIME per target, default 15s);
# make test gives each 3s (their seed corpora also run in unit).
fuzz:
	scripts/fuzz.sh

fuzz-short:
	FUZZTIME=3s scripts/fuzz.sh

# End-to-end: boots real desktops through real bureau servers. Each suite
# runs once, on one of the two databases, as a boot costs minutes under TCG:
# E2E_ON_POSTGRES on PostgreSQL (several hosts need it; backups with their
# restore on a second, SQLite install; teams; warm templates; the short
# fault soak, its bureau kills against PostgreSQL), the rest on SQLite, so
# that each half stays well inside its go test timeout. The store's unit
# tests run every query on both. `make e2e-sqlite E2E_ON_POSTGRES=` runs
# everything on SQLite.
e2e: e2e-sqlite e2e-postgres
E2E_ON_POSTGRES ?= TestBackups|TestTeams|TestWarmCreate|TestHostsRemoteDesktop|TestSoak

# go test -v's output of the e2e targets goes through CHECK_SKIPS: a test
# that skips fails the target unless e2e/skips.allowed lists it for that
# target with its reason (printed at the end). pipefail keeps go test's
# own failure.
CHECK_SKIPS = scripts/check-skips.sh e2e/skips.allowed $@

# playwright-core for the browser check of the console page (drives the
# host's /usr/bin/chromium; no browser download).
browser-deps: setup-test
	@test -d e2e/browser/node_modules/playwright-core -a -d e2e/browser/node_modules/@modelcontextprotocol/sdk || npm ci --prefix e2e/browser --no-audit --no-fund

e2e-sqlite: build browser-deps
	set -o pipefail; BUREAU_E2E_BIN=$(CURDIR)/$(BIN) BUREAU_E2E_IMAGE_DATA_DIR=$(DATA_DIR) \
		go test -count=1 -tags e2e -timeout $(E2E_TIMEOUT) -v -skip '^($(E2E_ON_POSTGRES))$$' ./e2e/ | $(CHECK_SKIPS)

e2e-postgres: build browser-deps
	set -o pipefail; $(START_POSTGRES); \
	BUREAU_E2E_BIN=$(CURDIR)/$(BIN) BUREAU_E2E_IMAGE_DATA_DIR=$(DATA_DIR) \
		BUREAU_REQUIRE_POSTGRES=1 BUREAU_E2E_DATABASE_URL="$$url" BUREAU_E2E_HOSTS_SHORT=1 \
		go test -count=1 -tags e2e -timeout $(E2E_TIMEOUT) -v -run '^($(E2E_ON_POSTGRES)|TestHosts)$$' ./e2e/ | $(CHECK_SKIPS)

# The desktop on a second host in full: make test's run (BUREAU_E2E_HOSTS_SHORT=1)
# leaves out the stopped desktop's snapshot, revert, grow and reimage there (two boots).
e2e-hosts: build browser-deps
	set -o pipefail; $(START_POSTGRES); \
	BUREAU_E2E_BIN=$(CURDIR)/$(BIN) BUREAU_E2E_IMAGE_DATA_DIR=$(DATA_DIR) \
		BUREAU_REQUIRE_POSTGRES=1 BUREAU_E2E_DATABASE_URL="$$url" \
		go test -count=1 -tags e2e -timeout $(E2E_TIMEOUT) -v -run '^TestHostsRemoteDesktop$$' ./e2e/ | $(CHECK_SKIPS)

# The typing and key checks TYPING_RUNS times in a row on one desktop
# (make test runs them once).
typing-soak: setup build image browser-deps
	set -o pipefail; BUREAU_TYPING_RUNS=$(or $(TYPING_RUNS),20) BUREAU_E2E_BIN=$(CURDIR)/$(BIN) BUREAU_E2E_IMAGE_DATA_DIR=$(DATA_DIR) \
		go test -count=1 -tags e2e -timeout $(E2E_TIMEOUT) -v -run 'TestDesktopLifecycle$$/computer_use' ./e2e/ | $(CHECK_SKIPS)

# The fault soak: SOAK_FAULTS faults (kill -9 of bureau and of QEMU,
# libvirtd restarts, clients hanging up) among random operations on two real
# desktops, invariants checked after every step (make test runs 4, one of each kind;
# SOAK_SEED replays a schedule). Results in RELIABILITY.md.
soak: setup build image
	set -o pipefail; BUREAU_SOAK_FAULTS=$(or $(SOAK_FAULTS),200) BUREAU_SOAK_SEED=$(SOAK_SEED) BUREAU_E2E_BIN=$(CURDIR)/$(BIN) BUREAU_E2E_IMAGE_DATA_DIR=$(DATA_DIR) \
		go test -count=1 -tags e2e -timeout $(or $(SOAK_TIMEOUT),600m) -v -run TestSoak ./e2e/ | $(CHECK_SKIPS)

clean:
	rm -rf bin

# The console proxy against a direct connection to the same VNC server.
bench-proxy:
	go test -run '^$$' -bench . -benchtime $(or $(BENCHTIME),3s) ./internal/console

# Webhook delivery latency, event to a receiver on loopback (no desktop):
# one at a time, then a burst (see BENCHMARKS.md).
bench-webhooks:
	BUREAU_WEBHOOK_BENCH_EVENTS=$(or $(EVENTS),1000) go test -count=1 -run '^TestDeliveryLatency$$' -v ./internal/webhooks | grep -E 'bench:|^(ok|FAIL|---)'

# Boots one real desktop and prints a table of what a user waits for.
bench: setup build image bench-proxy
	set -o pipefail; BUREAU_BENCH=1 BUREAU_E2E_BIN=$(CURDIR)/$(BIN) \
		go test -count=1 -tags e2e -timeout $(E2E_TIMEOUT) -v -run '^TestBench$$' ./e2e/ | $(CHECK_SKIPS)

# Typing speed in four rounds on one desktop: compare trees by several
# rounds each, as the guest's speed varies from run to run.
bench-typing: setup build image
	set -o pipefail; BUREAU_BENCH_TYPING=1 BUREAU_E2E_BIN=$(CURDIR)/$(BIN) \
		go test -count=1 -tags e2e -timeout $(E2E_TIMEOUT) -v -run '^TestTypingRounds$$' ./e2e/ | $(CHECK_SKIPS)

# Backups side by side: full and incremental to a real SeaweedFS, the
# guest's disk during a backup, dedup over five desktops, a restore.
bench-backup: setup-test build image
	set -o pipefail; BUREAU_BENCH_BACKUP=1 BUREAU_E2E_BIN=$(CURDIR)/$(BIN) \
		go test -count=1 -tags e2e -timeout $(E2E_TIMEOUT) -v -run '^TestBackupBench$$' ./e2e/ | $(CHECK_SKIPS)

# What HTTPS costs through bureau: handshakes, requests and a live URL's
# download over plain HTTP, then on the same server with BUREAU_TLS=auto
# (a certificate from Pebble on loopback), one desktop.
bench-tls: setup-test build image
	set -o pipefail; BUREAU_BENCH_TLS=1 BUREAU_E2E_BIN=$(CURDIR)/$(BIN) \
		go test -count=1 -tags e2e -timeout $(E2E_TIMEOUT) -v -run '^TestTLSBench$$' ./e2e/ | $(CHECK_SKIPS)

# Ways back from hibernation side by side on one desktop: saved as is,
# saved after its page cache was dropped, restored ahead by a console link.
bench-wake: setup build image
	set -o pipefail; BUREAU_BENCH_WAKE=1 BUREAU_E2E_BIN=$(CURDIR)/$(BIN) \
		go test -count=1 -tags e2e -timeout $(E2E_TIMEOUT) -v -run '^TestWakeRounds$$' ./e2e/ | $(CHECK_SKIPS)

# Warm-created desktops side by side until 20 run (BUREAU_DENSITY_N) or the
# host refuses one: host memory and KSM as they settle, then 1 running,
# 4 napping and the rest sleeping.
bench-density: setup build image
	set -o pipefail; BUREAU_BENCH_DENSITY=1 BUREAU_E2E_BIN=$(CURDIR)/$(BIN) \
		go test -count=1 -tags e2e -timeout $(E2E_TIMEOUT) -v -run '^TestDensity$$' ./e2e/ | $(CHECK_SKIPS)

# make test's benchmarks: the console proxy's, briefly. The rest run in
# short on the lifecycle's desktop (TestDesktopLifecycle/benchmarks in
# e2e-sqlite) instead of a boot of their own; make bench runs them in full.
bench-short:
	$(MAKE) bench-proxy BENCHTIME=200ms
