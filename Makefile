# Thin front door: every target sets up what it needs (scripts/setup.sh) and calls
# the driver. Variables: TARGET (default x86_64-unknown-linux-gnu), ARGS (extra
# arguments for the driver).
SHELL := /bin/bash
PYFREIGHT := .venv/bin/pyfreight
TARGET ?= x86_64-unknown-linux-gnu
ARGS ?=

.PHONY: setup images fetch deps test test-unit lint linux-x86_64-pgo clean

setup:
	@scripts/setup.sh

images: setup
	$(PYFREIGHT) images

fetch: setup
	$(PYFREIGHT) fetch --all $(ARGS)

deps: setup
	$(PYFREIGHT) deps --target $(TARGET) $(ARGS)

test: setup
	.venv/bin/ruff check pyfreight tests
	.venv/bin/ruff format --check pyfreight tests
	.venv/bin/pytest -ra $(ARGS)

test-unit: setup
	.venv/bin/pytest -ra -m "not container" $(ARGS)

lint: setup
	.venv/bin/ruff check pyfreight tests && .venv/bin/ruff format --check pyfreight tests

# The CPython build itself is the next step of the project (issue 4); for now this
# builds its dependencies and says so.
linux-x86_64-pgo: deps
	@echo "error: building CPython is not implemented yet; 'make deps' built its dependencies" >&2
	@exit 1

clean:
	rm -rf build dist
