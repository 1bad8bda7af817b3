tar xf "$SRC/sqlite3_3.53.4.orig.tar.xz"
cd sqlite3-3.53.4
# The autosetup configure of the full tree (its Tcl interpreter, jimsh, is bundled).
# --disable-tcl: no tclsqlite3 extension, and no Tcl needed to generate sources.
# --disable-readline: the sqlite3 shell is not shipped, so it needs no line editing.
# --fts3 ... --dbstat: the extensions CPython's own builds enable. Math functions,
#   JSON and loadable extensions are on by default.
# FTS3_PARENTHESIS (AND/OR/NOT in FTS queries) has no configure switch.
# CC_FOR_BUILD: the image has no "cc" to build jimsh0 with; $BUILD_CC builds for
#   the build machine.
CFLAGS="$CFLAGS -DSQLITE_ENABLE_FTS3_PARENTHESIS" CC_FOR_BUILD="$BUILD_CC" \
./configure ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX" --disable-shared --enable-static \
  --disable-tcl --disable-readline \
  --fts3 --fts4 --fts5 --rtree --geopoly --dbstat
make -j"$JOBS" libsqlite3.a
# Library, headers and sqlite3.pc only: plain "install" adds the shell and man page.
make install-lib install-headers install-pc
