# Thin front door: every target sets up what it needs (scripts/setup.sh) and calls
# the driver. Variables: CPYTHON (the pinned CPython minor version to build; default:
# the driver's, cpython/versions.yaml `default`), TARGET (a triple or make name of targets/*.yaml; default: the one marked
# default there), ARGS (extra arguments for the driver).
SHELL := /bin/bash
PYFREIGHT := .venv/bin/pyfreight
TARGET ?=
target_flag = $(if $(TARGET),--target $(TARGET),)
# CPYTHON names a CPython version, never the host's interpreter (scripts/setup.sh reads
# PYFREIGHT_HOST_PYTHON for that). `make … PYTHON=3.13` on the command line is accepted
# too; a PYTHON exported by the shell (often a path to an interpreter) is not read.
CPYTHON ?= $(if $(filter command line,$(origin PYTHON)),$(PYTHON),)
python_flag = $(if $(CPYTHON),--python $(CPYTHON),)
# FREETHREADED=1 builds the free-threaded variant of any option; MODIFIERS=pie (or
# another +-separated list, docs/performance.md) departs from the default code generation.
FREETHREADED ?=
MODIFIERS ?=
ARGS ?=
# A build goal hands the driver its own name and the variables; cpython/naming.py reads
# MAKE_NAME-SUFFIX back into the build, as it writes the make command of a build.
build = $(PYFREIGHT) build --make $@ CPYTHON=$(CPYTHON) FREETHREADED=$(FREETHREADED) MODIFIERS=$(MODIFIERS) $(ARGS)

# The CPython builds (pattern rules, below) are not .PHONY: make skips pattern rules
# for phony targets.
.PHONY: setup images fetch deps test test-all test-part test-unit lint clean bench bench-import bench-app

setup:
	@scripts/setup.sh

images: setup
	$(PYFREIGHT) images

fetch: setup
	$(PYFREIGHT) fetch --all $(ARGS)

deps: setup
	$(PYFREIGHT) deps $(target_flag) $(ARGS)

# The test tiers (tests/tiers.py): `test` is CI's (.ci/run), `test-all` every test,
# `test-part PART=NAME` one part of test-all (a GitHub job each). `test` lists its 25
# slowest steps at the end: its budget on a fresh 2-core machine is 35 minutes. Both run
# on every core (pytest-xdist), in groups queued in the order tests/conftest.py gives them
# (ENGINE_GROUP): the engine's tests in order on one worker, the rest beside them.
PARALLEL := -n auto --dist loadgroup --no-loadscope-reorder
test: lint
	.venv/bin/pytest -ra --durations=25 $(PARALLEL) --tier ci $(ARGS)

test-all: lint
	.venv/bin/pytest -ra $(PARALLEL) --tier all $(ARGS)

test-part:
	@[ -n "$(PART)" ] || { echo "error: say which part: make test-part PART=NAME (python -m tests.tiers lists them)" >&2; exit 2; }
	@scripts/setup.sh
	.venv/bin/pytest -ra --part $(PART) $(ARGS)

test-unit: setup
	.venv/bin/pytest -ra $(PARALLEL) -m "not container" $(ARGS)

# ruff for lint and format (the driver, the tests, and windows/install-pip.py, which the
# build container's python3 runs), mypy for types (configured in pyproject.toml), actionlint
# (with shellcheck) for the GitHub workflows, shellcheck for the driver's scripts and,
# as bash at warning level, the build scripts (recipes run them with -euo pipefail, so
# an unchecked cd cannot go on; libxcb's one unquoted $(...) is a word list on purpose).
lint: setup
	.venv/bin/ruff check pyfreight tests windows/*.py
	.venv/bin/ruff format --check pyfreight tests windows/*.py
	.venv/bin/mypy
	.venv/bin/actionlint
	shellcheck scripts/*.sh .ci/run pyfreight/container/entry.sh pyfreight/container/zig-cc.sh
	shellcheck --shell=bash --severity=warning --exclude=SC2164,SC2046 recipes/*/build.sh libc-recipes/*/build.sh cpython/*.sh windows/*.sh

# CPython builds for any target of targets/*.yaml by its make name, e.g.
# `make MAKE_NAME-noopt`: dependencies first, then the interpreter, then
# check-install. An unknown name stops with the list of known ones.
%-noopt: setup
	$(build)

%-debug: setup
	$(build)

%-lto: setup
	$(build)

# The default distribution: PGO and LTO.
%-pgo: setup
	$(build)

# The dependencies alone: every recipe the target has (`make MAKE_NAME-deps`).
%-deps: setup
	$(PYFREIGHT) deps --target $* $(ARGS)

# Speed: pyperformance subset, our pgo+lto and noopt vs Debian's python (table + JSON).
bench: setup
	$(PYFREIGHT) bench $(python_flag) $(target_flag) $(ARGS)

# Whole-stdlib import from memory vs the filesystem, on the pgo+lto archive (table + JSON).
bench-import: setup
	$(PYFREIGHT) bench-import $(python_flag) $(target_flag) --pie-both $(ARGS)

# Single-file applications: embed's defaults beside PyInstaller --onefile (table + JSON).
bench-app: setup
	$(PYFREIGHT) bench-app $(python_flag) $(target_flag) $(ARGS)

clean:
	rm -rf build dist
