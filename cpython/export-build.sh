# Copies what packers re-link an interpreter from into $OUTPUT_DIR/build (the
# distribution's python/build/): every object file of the build, the HACL* archives
# the hash modules link, the inittab source (config.c) and its template, the Setup
# files that say which objects and libraries each module has, and make's own values
# of the object and library lists (make-vars.txt), so the driver reads them instead
# of guessing. Runs in the CPython source folder after `make`.
out="$OUTPUT_DIR/build"
mkdir -p "$out"
{
  find Objects Parser Python Modules Programs -name '*.o'
  find Modules/_hacl -name '*.a'
  printf '%s\n' Modules/config.c Modules/config.c.in Python/frozen.c \
    Modules/Setup.local Modules/Setup.stdlib Modules/Setup.bootstrap
} | LC_ALL=C sort > "$out/.files"
tar -cf - -T "$out/.files" | tar -C "$out" -xf -
rm "$out/.files"
make --no-print-directory -s -f Makefile -f "$RECIPE_DIR/print-vars.mk" pyfreight-print-vars \
  > "$out/make-vars.txt"
