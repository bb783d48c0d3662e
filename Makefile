# Lade — build, run, test, benchmark, install.
PREFIX ?= /usr/local
SWIFT ?= swift
LADE := .build/debug/lade
SYSTEM_PACKAGES := libsqlite3-dev libxml2-dev zlib1g-dev pkg-config

.PHONY: all deps build run test tsan bench install clean

all: build

# The C libraries Lade links; installed with apt-get only when pkg-config cannot find them.
deps:
	@if ! pkg-config --exists sqlite3 libxml-2.0 zlib 2>/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing $(SYSTEM_PACKAGES)"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSTEM_PACKAGES); \
		else \
			echo "Lade needs $(SYSTEM_PACKAGES): install them (e.g. sudo apt-get install $(SYSTEM_PACKAGES))" >&2; exit 1; \
		fi; \
	fi

build: deps
	$(SWIFT) build

# The main job on the shipped samples. Until the import job lands, it prints the sample model.
run: build
	$(LADE) inspect samples/Catalog.xcdatamodeld

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# The context tests (private queues, parent/child saves, two contexts saving one object)
# under ThreadSanitizer, in a build folder of their own.
tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
	TSAN_OPTIONS=halt_on_error=1 $(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan \
		--filter 'ConcurrencyTests|ParentChildTests|ContextTests|MergePolicyTests'

bench:
	@echo "no benchmarks yet: 'make bench' arrives with the import job (lade run), measured beside sqlite3's .import"

install: deps
	$(SWIFT) build -c release --product lade
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 .build/release/lade $(DESTDIR)$(PREFIX)/bin/lade

clean:
	rm -rf .build
