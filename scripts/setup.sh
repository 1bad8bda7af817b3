#!/usr/bin/env bash
# Prepares everything the driver needs on this machine: the Python environment
# (.venv with pyfreight and its dependencies) and the host tools (Docker engine,
# debootstrap). Safe to run again: each step checks before it acts.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p build/logs

is_debian_root() { [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ]; }

apt_install() {
  if ! is_debian_root; then
    echo "error: missing $*; install it (Debian: sudo apt-get install -y $*) and run again" >&2
    exit 1
  fi
  echo "setup: installing $* from Debian" >&2
  if [ ! -f build/logs/.apt-updated ]; then
    apt-get update >build/logs/apt.log 2>&1 || { tail -n 20 build/logs/apt.log >&2; exit 1; }
    touch build/logs/.apt-updated
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" \
    >>build/logs/apt.log 2>&1 || { tail -n 20 build/logs/apt.log >&2; echo "log: build/logs/apt.log" >&2; exit 1; }
}

# --- Python environment for the driver -------------------------------------
# The host interpreter that runs the driver. Not PYTHON: make passes its PYTHON (a
# CPython version to build) down to this script.
python=${PYFREIGHT_HOST_PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "error: pyfreight needs Python 3.11 or newer as '$python' (set PYFREIGHT_HOST_PYTHON=/path/to/python3)" >&2
  exit 1
fi
if ! "$python" -m venv --help >/dev/null 2>&1; then apt_install python3-venv; fi
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  echo "setup: creating .venv (log: build/logs/pip.log)" >&2
  "$python" -m venv .venv
  .venv/bin/pip install --disable-pip-version-check -q -e '.[test]' >build/logs/pip.log 2>&1 \
    || { tail -n 30 build/logs/pip.log >&2; echo "log: build/logs/pip.log" >&2; exit 1; }
  touch "$stamp"
fi

# --- Host tools --------------------------------------------------------------
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || apt_install debootstrap
# `pyfreight embed` links on the host: gcc and binutils for any archive; clang, lld and
# llvm of the build's LLVM for LTO (bitcode) archives; strace for the memory-importer proof.
command -v gcc >/dev/null 2>&1 || apt_install gcc libc6-dev
llvm=$(.venv/bin/python -c 'from pyfreight.toolchain import LLVM; print(LLVM)')
if ! { command -v "clang-$llvm" && command -v "ld.lld-$llvm" && command -v "llvm-ar-$llvm"; } >/dev/null 2>&1; then
  apt_install "clang-$llvm" "lld-$llvm" "llvm-$llvm"
fi
command -v strace >/dev/null 2>&1 || apt_install strace
# pkg-config: the tests build a program from the python3-embed.pc of our trees, as users do.
command -v pkg-config >/dev/null 2>&1 || apt_install pkgconf
# GNU patch applies zig-patches/ to the pinned zig when it is unpacked here.
command -v patch >/dev/null 2>&1 || apt_install patch
# Compilers that link for the cross-compiled targets (targets/*.yaml `toolchain.cross_cc`), for
# `pyfreight embed` of their archives.
for entry in $(.venv/bin/python -c 'import pyfreight.targets as t; print(*t.cross_compilers())'); do
  packages=${entry#*:}
  # shellcheck disable=SC2086  # one word per package
  command -v "${entry%%:*}" >/dev/null 2>&1 || apt_install ${packages//,/ }
done
# `make lint` checks the GitHub workflows (which cannot run here) with actionlint, a Go
# program built from its pinned module; it runs shellcheck on their shell steps, and
# make lint runs shellcheck on our own scripts.
command -v shellcheck >/dev/null 2>&1 || apt_install shellcheck
actionlint_version=1.7.7
if [ "$(.venv/bin/actionlint -version 2>/dev/null | head -n 1)" != "v$actionlint_version" ]; then
  # Go's own installer puts it in /usr/local/go, which a non-login shell may not have on PATH.
  go=$(command -v go || echo /usr/local/go/bin/go)
  [ -x "$go" ] || { apt_install golang-go; go=$(command -v go); }
  echo "setup: building actionlint $actionlint_version with $go (log: build/logs/go.log)" >&2
  GOBIN="$root/.venv/bin" "$go" install "github.com/rhysd/actionlint/cmd/actionlint@v$actionlint_version" \
    >build/logs/go.log 2>&1 || { tail -n 20 build/logs/go.log >&2; echo "log: build/logs/go.log" >&2; exit 1; }
fi
# Emulators for the targets that do not run natively here (targets/*.yaml `run`).
# shellcheck disable=SC2046  # one word per emulator name
scripts/ensure-emulators.sh $(.venv/bin/python -c 'import pyfreight.targets as t; print(*t.emulators())')
exec scripts/ensure-docker.sh
