#!/usr/bin/env bash
# Makes sure a Docker engine answers. As root on Debian it installs docker.io and
# starts dockerd in the background; anywhere else it says what is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
log="$root/build/logs/dockerd.log"
mkdir -p "$(dirname "$log")"

docker info >/dev/null 2>&1 && exit 0

if [ "$(id -u)" != 0 ] || [ ! -f /etc/debian_version ]; then
  cat >&2 <<MSG
error: no Docker engine answers 'docker info'.
  Install Docker (Debian: sudo apt-get install -y docker.io) and start it
  (sudo systemctl start docker, or sudo dockerd &), and make sure your user may
  use it (sudo usermod -aG docker \$USER), then run this again.
MSG
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  echo "setup: installing docker.io from Debian (log: build/logs/apt.log)" >&2
  apt-get update >>"$root/build/logs/apt.log" 2>&1
  DEBIAN_FRONTEND=noninteractive apt-get install -y docker.io >>"$root/build/logs/apt.log" 2>&1 \
    || { tail -n 20 "$root/build/logs/apt.log" >&2; exit 1; }
fi
command -v docker >/dev/null 2>&1 || { echo "error: docker client missing after install" >&2; exit 1; }

echo "setup: starting dockerd in the background (log: $log)" >&2
nohup dockerd >>"$log" 2>&1 </dev/null &
for _ in $(seq 60); do
  if docker info >/dev/null 2>&1; then exit 0; fi
  sleep 1
done
echo "error: dockerd did not answer within 60 s; last lines of $log:" >&2
tail -n 30 "$log" >&2
exit 1
