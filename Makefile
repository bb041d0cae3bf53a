# Thin wrapper over CMake. `make demo` and `make test` are the two commands.
JOBS  ?= $(shell nproc)
CMAKE ?= cmake
FUZZ_SECONDS ?= 60

.PHONY: all deps build demo test test-fast test-asan test-tsan test-fuzz test-interop bench docs interop install clean

all: build

deps:
	@scripts/deps.sh

build: deps
	@echo "[$$(date +%T)] build"
	@$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@$(CMAKE) --build build -j$(JOBS)

demo: build
	@scripts/demo.sh

# Every test: the normal build, the same suite under ASan+UBSan, the unit
# tests under ThreadSanitizer, the parser and engine fuzzers for a bounded
# time, and interop with Linux rxe in a VM.
test: test-fast test-asan test-tsan test-fuzz test-interop

# Each stage says when it starts: a slow CI run shows where its time went.
test-fast: build
	@echo "[$$(date +%T)] test-fast"
	ctest --test-dir build --output-on-failure -j$(JOBS)

test-asan: deps
	@echo "[$$(date +%T)] test-asan: build"
	@$(CMAKE) -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DXROCE_SANITIZE=ON >/dev/null
	@$(CMAKE) --build build-asan -j$(JOBS)
	@echo "[$$(date +%T)] test-asan: run"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir build-asan --output-on-failure -j$(JOBS)

# The unit tests' threads (posters, engines, progress threads, links) under
# ThreadSanitizer, no suppressions (src/nic/dma.c: the host side of DMA).
test-tsan: deps
	@echo "[$$(date +%T)] test-tsan: build"
	@CC=clang $(CMAKE) -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DXROCE_TSAN=ON >/dev/null
	@$(CMAKE) --build build-tsan -j$(JOBS)
	@echo "[$$(date +%T)] test-tsan: run"
	ctest --test-dir build-tsan --output-on-failure -j$(JOBS)

test-fuzz: deps
	@echo "[$$(date +%T)] test-fuzz"
	@CC=clang $(CMAKE) -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DXROCE_FUZZ=ON -DXROCE_FUZZ_SECONDS=$(FUZZ_SECONDS) >/dev/null
	@$(CMAKE) --build build-fuzz -j$(JOBS)
	ctest --test-dir build-fuzz --output-on-failure

# xroce against Linux rxe + perftest in a qemu VM (needs root; ~10 min on
# 2 cores); writes docs/interop.md. XR_ONLY / XR_LINKS narrow it down.
test-interop interop: build
	@echo "[$$(date +%T)] test-interop: packages"
	@scripts/deps.sh interop
	@echo "[$$(date +%T)] test-interop: run"
	/usr/bin/python3 tests/interop/run_interop.py $(CURDIR)/build/bin $(CURDIR)/docs/interop.md
	/usr/bin/python3 tests/interop/run_conformance_rxe.py $(CURDIR)/build/bin $(CURDIR)/docs/conformance-rxe.md

docs: build
	build/bin/xroce-regs doc > docs/registers.md
	python3 src/ibverbs/verbs_table.py "$$(sed -n 's/^IBVERBS_SYSTEM:FILEPATH=//p' build/CMakeCache.txt)" \
		"$$(sed -n 's/^IBVERBS_INCLUDE:PATH=//p' build/CMakeCache.txt)/infiniband/verbs.h" src/ibverbs > docs/ibverbs.md

bench: build
	@build/bin/bench-wire
	@echo
	@build/bin/bench-rc
	@echo
	@bench/perf.sh build/bin
	@echo
	@bench/host.sh build/bin
	@echo
	@bench/ibverbs.sh build/bin
	@echo
	@bench/links.sh build/bin/bench-links
	@echo
	@build/bin/bench-cc
	@echo
	@build/bin/bench-scale

# xroce-run into $(PREFIX)/bin, the drop-in libibverbs into $(PREFIX)/lib/xroce
# (a private directory: never over the system's libibverbs).
PREFIX ?= /usr/local
install: build
	$(CMAKE) --install build --prefix $(PREFIX)

clean:
	rm -rf build build-asan build-tsan build-fuzz
