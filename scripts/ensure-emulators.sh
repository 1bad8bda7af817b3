#!/usr/bin/env bash
# Makes foreign-architecture binaries runnable here, for the targets whose data says
# `run: {emulator: NAME}` (targets/*.yaml, listed by the driver and passed as
# arguments): binfmt_misc mounted, Debian's qemu-user-static and binfmt-support
# installed, each emulator registered. Debian registers them with flag F (the
# emulator is opened at registration), so the same binaries run inside containers.
# Safe to run again. Without root it only reports what is missing: native targets
# do not need any of this.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
log="$root/build/logs/apt.log"
binfmt=/proc/sys/fs/binfmt_misc
[ "$#" -gt 0 ] || exit 0

missing() {
  for emulator in "$@"; do
    grep -qs '^enabled' "$binfmt/$emulator" || echo "$emulator"
  done
}
[ -z "$(missing "$@")" ] && exit 0

if [ "$(id -u)" != 0 ] || [ ! -f /etc/debian_version ]; then
  echo "setup: note: foreign targets need binfmt_misc emulators ($(missing "$@" | xargs)); as root:" \
    "mount -t binfmt_misc binfmt_misc $binfmt; apt-get install -y qemu-user-static binfmt-support" >&2
  exit 0
fi
if [ ! -e "$binfmt/register" ]; then
  mount -t binfmt_misc binfmt_misc "$binfmt" || {
    echo "error: cannot mount binfmt_misc at $binfmt (a container needs --privileged for it)" >&2
    exit 1
  }
fi
if ! command -v update-binfmts >/dev/null 2>&1 || [ ! -d /usr/share/binfmts ] \
  || ! dpkg-query -W -f '${Status}' qemu-user-static 2>/dev/null | grep -q 'ok installed'; then
  echo "setup: installing qemu-user-static and binfmt-support from Debian (log: build/logs/apt.log)" >&2
  apt-get update >>"$log" 2>&1 || { tail -n 20 "$log" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends qemu-user-static binfmt-support \
    >>"$log" 2>&1 || { tail -n 20 "$log" >&2; echo "log: $log" >&2; exit 1; }
fi
# Registered by the packages' scripts when binfmt_misc was mounted then; after a reboot
# (or a mount made later) they are imported again from /usr/share/binfmts.
for emulator in $(missing "$@"); do
  update-binfmts --import "$emulator" >>"$log" 2>&1 || true
  update-binfmts --enable "$emulator" >>"$log" 2>&1 || true
done
still=$(missing "$@" | xargs)
if [ -n "$still" ]; then
  echo "error: emulators not registered in $binfmt: $still (see $log)" >&2
  exit 1
fi
