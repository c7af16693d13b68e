# ddx - two entry points that work on a fresh Debian 12 machine as root:
#   make demo   install what is missing, build, diagnose the bundled example
#   make test   install what is missing, build (plain and ASan+UBSan), run every test
.PHONY: eval-memory test-launch eval-launch robustness golden catalog all deps deps-arm64 build build-asan build-arm64 test-arm64 demo test test-unit test-asan test-vscode test-catalog screenshots vsix eval accuracy bench format format-check fuzz fuzz-short clean

BUILD      ?= build
BUILD_ASAN ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
DEB_PKGS   := build-essential cmake pkg-config libjansson-dev libuv1-dev libpcre2-dev python3 python3-jsonschema clang-format clang libclang-rt-14-dev nodejs neovim emacs-nox elpa-eglot valgrind python3-torch
DEMO_LOG   := examples/zero3-oom-8gpu.log
BUILD_ARM64 ?= build-arm64
# linux-arm64 (GH200/Grace): Debian's cross gcc, the multiarch dev packages, qemu-user for the tests.
DEB_PKGS_ARM64 := gcc-aarch64-linux-gnu libc6-dev-arm64-cross libjansson-dev:arm64 libuv1-dev:arm64 libpcre2-dev:arm64 qemu-user-static file

all: build

# Installs the Debian packages that are missing (apt-get needs root; as a
# normal user it only tells what to install).
# (A name installed for two architectures, as the -dev packages are after
# make deps-arm64, is ambiguous to dpkg -s: then the host's one is asked for.)
deps:
	@arch=$$(dpkg --print-architecture); missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || dpkg -s $$p:$$arch >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing packages:$$missing (run as root or: sudo apt-get install$$missing)"; exit 1; fi; \
	fi; \
	if ! command -v npm >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get install -y -qq npm >/dev/null; else echo "npm is missing"; exit 1; fi; \
	fi

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS) >$(BUILD)/build.log 2>&1 || { cat $(BUILD)/build.log; exit 1; }
	@test -x $(BUILD)/ddx

# The arm64 packages (adds the arm64 architecture to dpkg first).
deps-arm64: deps
	@missing=""; for p in $(DEB_PKGS_ARM64); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    dpkg --add-architecture arm64 && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing packages:$$missing (run as root or: sudo dpkg --add-architecture arm64 && sudo apt-get update && sudo apt-get install$$missing)"; exit 1; fi; \
	fi

# linux-arm64 cross build (cmake/aarch64-linux-gnu.cmake), into build-arm64/.
build-arm64: deps-arm64
	@cmake -S . -B $(BUILD_ARM64) -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD_ARM64) -j$(JOBS) >$(BUILD_ARM64)/build.log 2>&1 || { cat $(BUILD_ARM64)/build.log; exit 1; }
	@file $(BUILD_ARM64)/ddx | grep -q 'ARM aarch64' || { file $(BUILD_ARM64)/ddx; exit 1; }

# The arm64 binaries under qemu-user: the unit tests and the rules check
# (ctest runs them through the toolchain's CMAKE_CROSSCOMPILING_EMULATOR),
# then every CLI test with scripts/ddx-arm64.sh as the ddx binary, each
# killed past ARM64_TIMEOUT seconds (a hang under qemu fails, it does not
# stall; KILL, as the child libuv forks blocks every other signal), then
# both platform packages built and checked (tests/vscode/package-check.sh:
# the arm64 server from its .vsix under qemu with its bundled libraries).
# Both qemu runs use the multiarch loader, not -L /usr/aarch64-linux-gnu
# (scripts/ddx-arm64.sh, docs/performance.md: that mix of two glibc builds
# made ddx run and --threads spin).
ARM64_TIMEOUT ?= 1500
test-arm64: build build-arm64
	cd $(BUILD_ARM64) && ctest --output-on-failure -E '^(cli_.*|lsp)$$'
	@fail=""; for t in tests/cli/test_*.sh; do \
	  echo "== $$t (arm64, qemu)"; s=$$(date +%s); \
	  DDX_ARM64=$(abspath $(BUILD_ARM64))/ddx timeout -s KILL $(ARM64_TIMEOUT) bash $$t scripts/ddx-arm64.sh || fail="$$fail $$t"; \
	  echo "   $$t: $$(($$(date +%s) - s)) s"; \
	done; \
	bash tests/vscode/package-check.sh || fail="$$fail tests/vscode/package-check.sh"; \
	if [ -n "$$fail" ]; then echo "test-arm64: failed:$$fail"; exit 1; fi; echo "test-arm64: all suites passed"

build-asan: deps
	@cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DDDX_SANITIZE=ON >/dev/null
	@cmake --build $(BUILD_ASAN) -j$(JOBS) >$(BUILD_ASAN)/build.log 2>&1 || { cat $(BUILD_ASAN)/build.log; exit 1; }
	@test -x $(BUILD_ASAN)/ddx

demo: build
	@echo "\$$ ddx diagnose $(DEMO_LOG)"
	@$(BUILD)/ddx diagnose $(DEMO_LOG); rc=$$?; [ $$rc -le 1 ] || exit $$rc

test-unit: build
	cd $(BUILD) && ctest --output-on-failure

test-asan: build-asan
	cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ctest --output-on-failure

# The corpus (development and held-back parts, calibration, the ablation
# benchmark; docs/accuracy.md is its --markdown output) and the generated
# multi-rank logs.
eval: build
	$(PY) tests/corpus/eval.py $(BUILD)/ddx --markdown $(BUILD)/accuracy.md
	$(PY) tests/memory/eval_reports.py $(BUILD)/ddx
	$(PY) tests/gen/eval_gen.py $(BUILD)/ddx --min 0
	$(PY) tests/launch/score.py tests/launch/recorded/seed1 --ddx $(BUILD)/ddx --quiet
	$(PY) tests/launch/score.py tests/launch/recorded/seed2 --ddx $(BUILD)/ddx --quiet
	$(PY) tests/corpus/damage.py $(BUILD)/ddx --markdown $(BUILD)/robustness.md

# Damaged pastes (line numbers, HTML escapes, hard wraps, ...): how many
# corpus answers survive each damage; docs/robustness.md is its output.
robustness: build
	$(PY) tests/corpus/damage.py $(BUILD)/ddx --markdown docs/robustness.md

# Real launchers (tests/launch/README.md): tiny gloo jobs on the CPU that fail by
# design, launched by torchrun (plain, --tee 3, --log_dir), torch.distributed.launch
# and mp.spawn under a pseudo-terminal, then scored with the real ddx. test-launch
# runs LAUNCH_SAMPLE cases of one seed live (every mode and launcher at least once);
# eval-launch runs every case of seeds 1 and 2 (seed 2 is the untuned check).
# make test scores the recorded seed 1 (tests/launch/recorded: the logs rules were
# written against, so its gates are high) and runs LAUNCH_SAMPLE live cases of
# LAUNCH_SEED (real torch on this machine, every mode and launcher at least once;
# its gates leave room for a live run's timing). Recorded seed 2 is the untuned
# check (make eval, make accuracy); eval-launch reruns both seeds live.
LAUNCH_SEED      ?= 4
LAUNCH_SAMPLE    ?= 20
LAUNCH_MIN_CLASS ?= 0.90
LAUNCH_MIN_RANK  ?= 0.75
test-launch: build
	$(PY) tests/launch/score.py tests/launch/recorded/seed1 --ddx $(BUILD)/ddx --quiet --min-class 0.97 --min-rank 0.88
	rm -rf $(BUILD)/launch
	$(PY) tests/launch/run.py --seed $(LAUNCH_SEED) --sample $(LAUNCH_SAMPLE) --jobs 2 --out $(BUILD)/launch
	$(PY) tests/launch/score.py $(BUILD)/launch --ddx $(BUILD)/ddx --min-class $(LAUNCH_MIN_CLASS) --min-rank $(LAUNCH_MIN_RANK)

eval-launch: build
	rm -rf $(BUILD)/launch-s1 $(BUILD)/launch-s2
	$(PY) tests/launch/run.py --seed 1 --jobs 2 --out $(BUILD)/launch-s1
	$(PY) tests/launch/run.py --seed 2 --jobs 2 --out $(BUILD)/launch-s2
	$(PY) tests/launch/score.py $(BUILD)/launch-s1 --ddx $(BUILD)/ddx --quiet
	$(PY) tests/launch/score.py $(BUILD)/launch-s2 --ddx $(BUILD)/ddx --quiet

# Rewrites docs/accuracy.md from the corpus (review the diff).
accuracy: build
	$(PY) tests/corpus/eval.py $(BUILD)/ddx --quiet --markdown docs/accuracy.md
	$(PY) tests/launch/score.py tests/launch/recorded/seed1 --ddx $(BUILD)/ddx --quiet --markdown docs/accuracy.md --title "Real launchers, seed 1 (tests/launch/recorded/seed1: the rules were tuned against it)"
	$(PY) tests/launch/score.py tests/launch/recorded/seed2 --ddx $(BUILD)/ddx --quiet --markdown docs/accuracy.md --title "Real launchers, seed 2 (tests/launch/recorded/seed2: never tuned against)"

# Benchmarks (not part of make test): ddx against rg and grep on generated
# logs of BENCH_SIZES, then the language server. docs/performance.md keeps
# the results. Needs ripgrep and a few GB of disk for the logs.
BENCH_SIZES ?= 100M 1G
bench: build
	@command -v rg >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && apt-get install -y -qq ripgrep >/dev/null; } || { echo "ripgrep is missing"; exit 1; }
	bash tests/bench/bench.sh $(BUILD)/ddx $(BENCH_SIZES)
	cd tests/lsp && { [ -d node_modules ] || npm ci --no-audit --no-fund --silent; }
	DDX=$(BUILD)/ddx node tests/bench/lsp_bench.js tests/bench/data tests/bench/data/bench-$(lastword $(BENCH_SIZES)).log

# Debian's python3 (with python3-jsonschema), whatever python3 is first on PATH.
PY := /usr/bin/python3

format-check: deps
	@clang-format --dry-run -Werror server/*/*.c server/lsp/internal.h include/ddx/*.h tests/unit/*.c tests/unit/*.h tests/fuzz/*.c && echo "format: clean"

# libFuzzer targets: a short fixed budget in make test, a long run in make fuzz.
fuzz-short: deps
	bash tests/fuzz/run.sh 20

fuzz: deps
	bash tests/fuzz/run.sh $${FUZZ_SECONDS:-600}

# VS Code extension: real extension host of code-server + headless Chromium
# (installs chromium, code-server and the npm packages it needs). Its UI run's
# screenshots go to $(BUILD)/screenshots: make test leaves the work tree as it
# was; make screenshots refreshes docs/screenshots.
test-vscode: build
	DDX_SCREENSHOTS=$(abspath $(BUILD))/screenshots bash tests/vscode/run.sh $(BUILD)/ddx

# The failure encyclopedia (ddx catalog --html) in headless Chromium over file://:
# every class, link and fragment, the search with and without scripts, a team catalog.
# make test writes its screenshots into build/screenshots; make screenshots
# refreshes docs/screenshots (the site's and the VS Code UI run's).
test-catalog: build
	bash tests/catalog/run.sh $(BUILD)/ddx

screenshots: build
	SHOTS=docs/screenshots bash tests/catalog/run.sh $(BUILD)/ddx
	DDX_SCREENSHOTS=$(abspath docs/screenshots) bash tests/vscode/run.sh $(BUILD)/ddx

# The platform packages ddx-linux-x64.vsix and ddx-linux-arm64.vsix (vsce
# package --target, each with only its own server: bundle-server.js --target,
# package-target.js); the arm64 server is cross-built (build-arm64).
vsix: build build-arm64
	npm ci --no-audit --no-fund && npm run package

# Activation bytes PyTorch saves for backward (CPU, Debian's python3-torch)
# against the memory model (docs/memory.md); fails past 10%.
test-memory: build
	PY=$(PY) bash tests/memory/cli.sh $(BUILD)/ddx
	$(PY) tests/memory/measure.py $(BUILD)/ddx

# ddx check-config's verdict on real runs from public threads (tests/memory/reports,
# dev and held parts; docs/memory.md "Validation on real runs").
eval-memory: build
	$(PY) tests/memory/eval_reports.py $(BUILD)/ddx --verbose

test: format-check test-unit test-asan fuzz-short test-vscode test-catalog test-memory test-launch
	$(PY) tests/rules/test_catalog.py
	$(PY) tests/rules/test_contract.py
	$(PY) tests/golden/run.py $(BUILD)/ddx
	@$(BUILD)/ddx catalog --markdown | diff -u docs/catalog.md - >$(BUILD)/catalog.diff || { head -40 $(BUILD)/catalog.diff; echo "docs/catalog.md is stale: run make catalog"; exit 1; }; echo "docs/catalog.md: current"
	@# The gates guard against a regression, not the held part's level. --min-held: held (never
	@# tuned against) is 112 of 138 (81.2%) after the 2026-12-04 round (52 new logs, 34 labels
	@# whose class is only in their thread lowered to low confidence). --max-silent: dev 2 of 201,
	@# held 0 of 138.
	$(PY) tests/corpus/eval.py $(BUILD)/ddx --quiet --min-accuracy 0.90 --min-held 0.76 --max-silent 0.03 --max-ece 0.10
	$(PY) tests/gen/eval_gen.py $(BUILD)/ddx --min 0.95 --min-rank-new 0.97 --min-rank-unknown 0.98
	@echo "make test: all suites passed"

# Rewrites tests/golden from build/ddx: the exact text and JSON reports of
# the logs in tests/golden/logs.txt (make test fails on any difference but
# the timing). Review git diff tests/golden (tests/golden/README.md).
golden: build
	$(PY) tests/golden/run.py $(BUILD)/ddx --update

# Rewrites docs/catalog.md from rules/ (make test fails when it is stale).
catalog: build
	$(BUILD)/ddx catalog --markdown -o docs/catalog.md

format:
	clang-format -i server/*/*.c server/lsp/internal.h include/ddx/*.h tests/unit/*.c tests/unit/*.h tests/fuzz/*.c

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_ARM64)
