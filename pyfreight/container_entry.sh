#!/usr/bin/env bash
# Runs inside the build container (no network, unprivileged): unpacks nothing
# itself, just starts the recipe's build.sh in the work folder with strict shell
# options, so every recipe gets the same start.
set -euo pipefail
cd /build/work
echo "pyfreight: building ${RECIPE_NAME} ${RECIPE_VERSION} for ${TARGET_TRIPLE} with ${JOBS} jobs"
echo "pyfreight: CC=${CC}"
echo "pyfreight: CFLAGS=${CFLAGS}"
exec bash -euo pipefail "${RECIPE_DIR}/build.sh"
