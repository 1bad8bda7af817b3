# Thin front door: every target sets up what it needs (scripts/setup.sh) and calls
# the driver. Variables: CPYTHON (the pinned CPython minor version to build, default
# 3.14), TARGET (default x86_64-unknown-linux-gnu), ARGS (extra arguments for the
# driver).
SHELL := /bin/bash
PYFREIGHT := .venv/bin/pyfreight
TARGET ?= x86_64-unknown-linux-gnu
# CPYTHON names a CPython version, never the host's interpreter (scripts/setup.sh reads
# PYFREIGHT_HOST_PYTHON for that). `make … PYTHON=3.13` on the command line is accepted
# too; a PYTHON exported by the shell (often a path to an interpreter) is not read.
CPYTHON ?= $(if $(filter command line,$(origin PYTHON)),$(PYTHON),3.14)
# FREETHREADED=1 builds the free-threaded variant of any option; MODIFIERS=pie (or
# another +-separated list, docs/performance.md) departs from the default code generation.
FREETHREADED ?=
MODIFIERS ?=
ARGS ?=
variant = $(if $(FREETHREADED),freethreaded+,)$(1)$(if $(MODIFIERS),+$(MODIFIERS),)
build = $(PYFREIGHT) build --python $(CPYTHON) --target $(TARGET) --options $(call variant,$(1)) $(ARGS)

.PHONY: setup images fetch deps test test-unit lint clean bench bench-import \
	linux-x86_64-noopt linux-x86_64-debug linux-x86_64-lto linux-x86_64-pgo

setup:
	@scripts/setup.sh

images: setup
	$(PYFREIGHT) images

fetch: setup
	$(PYFREIGHT) fetch --all $(ARGS)

deps: setup
	$(PYFREIGHT) deps --target $(TARGET) $(ARGS)

test: lint
	.venv/bin/pytest -ra $(ARGS)

test-unit: setup
	.venv/bin/pytest -ra -m "not container" $(ARGS)

# ruff for lint and format, mypy for types (configured in pyproject.toml).
lint: setup
	.venv/bin/ruff check pyfreight tests
	.venv/bin/ruff format --check pyfreight tests
	.venv/bin/mypy

# CPython builds: dependencies first, then the interpreter, then check-install.
linux-x86_64-noopt: setup
	$(call build,noopt)

linux-x86_64-debug: setup
	$(call build,debug)

linux-x86_64-lto: setup
	$(call build,lto)

# The default distribution: PGO and LTO.
linux-x86_64-pgo: setup
	$(call build,pgo+lto)

# Speed: pyperformance subset, our pgo+lto and noopt vs Debian's python (table + JSON).
bench: setup
	$(PYFREIGHT) bench --python $(CPYTHON) --target $(TARGET) $(ARGS)

# Whole-stdlib import from memory vs the filesystem, on the pgo+lto archive (table + JSON).
bench-import: setup
	$(PYFREIGHT) bench-import --python $(CPYTHON) --target $(TARGET) --pie-both $(ARGS)

clean:
	rm -rf build dist
