#!/usr/bin/env bash
# Runs inside the build container (no network, unprivileged): starts the recipe's
# build.sh in the work folder with strict shell options, then copies the license
# texts the recipe names into the artifact, so every recipe ships its licenses.
set -euo pipefail
cd /build/work
echo "pyfreight: building ${RECIPE_NAME} ${RECIPE_VERSION} for ${TARGET_TRIPLE} with ${JOBS} jobs"
echo "pyfreight: CC=${CC}"
echo "pyfreight: CFLAGS=${CFLAGS}"
bash -euo pipefail "${RECIPE_DIR}/build.sh"

# License paths are relative to /build/work, starting with the unpacked top folder.
dest="${PREFIX}/share/licenses/${RECIPE_NAME}"
while IFS= read -r path; do
  [ -n "$path" ] || continue
  if [ ! -f "/build/work/$path" ]; then
    echo "pyfreight: license file '$path' (recipe.yaml license_files) is not in /build/work" >&2
    exit 1
  fi
  mkdir -p "$dest/$(dirname "${path#*/}")"
  cp "/build/work/$path" "$dest/${path#*/}"
done <<< "${LICENSE_FILES}"
