# Lade — build, run, test, benchmark, install.
PREFIX ?= /usr/local
SWIFT ?= swift
LADE := .build/debug/lade
# The release lade links Swift's runtime and Foundation into the binary: it runs where Swift is
# not installed, and an import's peak memory is 4-5.5 MiB lower (the shared libraries' pages it
# would map). It still uses the system's SQLite, libxml2 and zlib.
RELEASE := -c release --static-swift-stdlib
SYSTEM_PACKAGES := libsqlite3-dev libxml2-dev zlib1g-dev pkg-config
PG_PACKAGES_CLIENT := libpq-dev pkg-config
PG_PACKAGES_SERVER := postgresql

.PHONY: all deps build run shape test test-fast test-slow fuzz tsan bench install clean

all: build

# The C libraries Lade links (SQLite, libxml2, zlib, libpq) and PostgreSQL's server for the tests
# (make test runs a private cluster: scripts/pg-test-cluster); installed with apt-get only when
# pkg-config, or scripts/pg-test-cluster for initdb and pg_ctl, cannot find them.
deps:
	@missing=""; \
	pkg-config --exists sqlite3 libxml-2.0 zlib 2>/dev/null || missing=" $(SYSTEM_PACKAGES)"; \
	pkg-config --exists libpq 2>/dev/null || missing="$$missing $(PG_PACKAGES_CLIENT)"; \
	scripts/pg-test-cluster bindir >/dev/null 2>&1 || missing="$$missing $(PG_PACKAGES_SERVER)"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing$$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
		else \
			echo "Lade needs$$missing: install them (e.g. sudo apt-get install$$missing)" >&2; exit 1; \
		fi; \
	fi

build: deps
	$(SWIFT) build

# The sample model, then the main job on the shipped samples: suppliers, then the nightly product import, into
# ./out/catalog.sqlite; prints each run's report (a second `make run` finds nothing to do).
run: build
	@mkdir -p out
	$(LADE) inspect samples/Catalog.xcdatamodeld
	$(LADE) run jobs/suppliers.yaml --report out/suppliers.report.json
	$(LADE) run jobs/products.yaml --report out/products.report.json

# The code's shape (docs/architecture.md): the folders of Sources/Lade used only downwards in their
# layer order, without a cycle or a forbidden edge; no function of the import session or the seed
# over 80 lines. Both read the sources as text (python3); skipped, saying so, where python3 is absent.
shape:
	@if command -v python3 >/dev/null; then \
		python3 .ci/layer-edges.py --check >/dev/null || { python3 .ci/layer-edges.py --names; exit 1; }; \
		echo "layer-edges: no edge up the layers, no cycle"; \
		python3 .ci/function-lengths.py --max 80 Sources/LadePipeline/Import Sources/LadePipeline/Seed; \
	else echo "shape checks skipped: python3 not found"; fi

# Every test (the libraries', the end-to-end tests of the built lade, the kill tests). A test that
# reads the Core Data corpus (../shared/coredata-corpus, or the directory LADE_CORPUS names) is
# skipped when it is absent, and the run ends with a line counting the tests skipped, by reason.
# The tests run beside a private PostgreSQL cluster (scripts/with-pg-test-cluster: a temporary
# directory, its own port and socket, stopped at the end whatever the outcome), or the server
# LADE_TEST_POSTGRES_SOCKET and the other variables of scripts/pg-test-cluster name.
test: deps shape
	$(SWIFT) build --build-tests
	scripts/with-pg-test-cluster $(SWIFT) test --skip-build

# The same without the tests marked .slow (2 s or more alone: the kill and signal tests, generated
# migration chains and patterns, the hostile and differential suites): under 2 minutes once built.
# `swift test` cannot select by Swift Testing tag (--filter and --skip match names), so .slow is a
# condition (Tests/LadeTestTraits/SkipTrait.swift) that skips its tests when LADE_TEST_LANE=fast;
# they are counted like the corpus tests. Not related to test-slow below.
test-fast: deps shape
	$(SWIFT) build --build-tests
	LADE_TEST_LANE=fast scripts/with-pg-test-cluster $(SWIFT) test --skip-build

# The slow lane (not part of make test): a generated store of SLOW_OBJECTS objects converted
# SQLite → XML → binary → SQLite and SQLite → SQLite by the release lade, each step timed with
# its peak RSS, the first and last compared through lade export; lade migrate of a copy to a
# next model version (an attribute added with a default, every table rebuilt), timed with its
# peak RSS and checked; metadata read from the big stores and from empty ones; lade meta set
# shown to change Z_METADATA alone.
SLOW_OBJECTS ?= 1000000
test-slow: deps
	$(SWIFT) build $(RELEASE) --product lade
	$(SWIFT) build $(RELEASE) --product lade-bench
	.build/release/lade-bench convert --objects $(SLOW_OBJECTS) --lade .build/release/lade --work .build/slow

# The fuzzing lane (not part of make test): every parser and reader (CSV, NDJSON, JSON array, gzip,
# model XML and JSON, job YAML, XML and binary stores, plist metadata, predicates, regular
# expressions, mapping models: Xcode's documents and compiled .cdm, compiled models and store
# model caches: .mom archives, raw-deflated) under libFuzzer, FUZZ_RUNS
# inputs each, every input bounded in time and memory.
# See Fuzz/run for the knobs (FUZZ_TARGETS, FUZZ_TIMEOUT, FUZZ_RSS_MB, FUZZ_PARALLEL).
FUZZ_RUNS ?= 1000000
fuzz: deps
	$(SWIFT) build $(RELEASE) --product lade
	LADE_FUZZ=1 $(SWIFT) build -c release --product lade-fuzz --scratch-path .build-fuzz \
		-Xswiftc -sanitize=fuzzer -Xswiftc -enable-testing
	FUZZ_RUNS=$(FUZZ_RUNS) Fuzz/run

# The context tests (private queues, parent/child saves, two contexts saving one object), batch
# requests, the import pipeline's reader and writer threads, and the migration manager's two
# contexts, under ThreadSanitizer, in a build folder of their own.
tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
	TSAN_OPTIONS=halt_on_error=1 $(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan \
		--filter 'ConcurrencyTests|ParentChildTests|ContextTests|MergePolicyTests|BatchRequestTests|BatchInsertSessionTests|ConfigurationRoutingTests|FaultFailureTests|ImportPipelineThreadTests|MappingModelTests|StoreTransactionTests'

# lade run beside sqlite3's own .import on the same generated data, alternating, medians of
# BENCH_RUNS runs; BENCH_ROWS=10000000 for the flat-memory check. Needs the sqlite3 command. Then the
# PostgreSQL lines (lade-bench postgresql, on a private server): lade run beside psql \\copy of the same rows
# into a table of the same definition, a forced re-run, and 1, 2 and 4 workers into one store.
BENCH_ROWS ?= 1000000
BENCH_RUNS ?= 3
bench: deps
	@command -v sqlite3 >/dev/null || { echo "make bench needs the sqlite3 command (apt-get install sqlite3)" >&2; exit 1; }
	$(SWIFT) build $(RELEASE) --product lade
	$(SWIFT) build $(RELEASE) --product lade-bench
	.build/release/lade-bench run --rows $(BENCH_ROWS) --runs $(BENCH_RUNS) --lade .build/release/lade --work .build/bench
	scripts/with-pg-test-cluster .build/release/lade-bench postgresql --rows $(BENCH_ROWS) --runs $(BENCH_RUNS) --lade .build/release/lade --work .build/bench

install: deps
	$(SWIFT) build $(RELEASE) --product lade
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 .build/release/lade $(DESTDIR)$(PREFIX)/bin/lade

clean:
	rm -rf .build
