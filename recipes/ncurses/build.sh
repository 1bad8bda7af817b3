tar xf "$SRC/ncurses_6.5+20250216.orig.tar.gz"
cd ncurses-6.5-20250216
# --enable-widec: libncursesw (what CPython's curses module prefers).
# Programs are built (no --without-progs) because installing the terminfo database
#   needs our own tic; they are not installed.
# --with-terminfo-dirs: where Debian, Fedora, Arch and Alpine keep terminfo, searched
#   at run time; --with-default-terminfo-dir: the one compiled in as the default.
# --disable-pkg-ldflags: keep our LDFLAGS (-fuse-ld=lld, -L...) out of the .pc files.
# No --enable-symlinks: tic then links aliases with hard links, which the artifact
#   stores as regular files, instead of absolute symlinks.
# cf_cv_ar_flags: configure would pick "ar -curvU", which stamps build times into
#   the .a files; D (deterministic) keeps them reproducible.
# macOS: a short ospeed (the default) is mapped through the old BSD baud rates of
#   <sys/ttydev.h>, which zig's macOS headers lack; an unsigned one needs no mapping
#   (CPython's curses module does not use ospeed).
ospeed=()
if [ "$TARGET_OS" = macos ]; then ospeed=(--with-ospeed=unsigned); fi
cf_cv_ar_flags=-crvD ./configure "${ospeed[@]}" ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX" --enable-widec \
  --without-shared --without-cxx --without-cxx-binding --without-ada \
  --without-manpages --without-tests --without-debug \
  --enable-pc-files --with-pkg-config-libdir="$PREFIX/lib/pkgconfig" --disable-pkg-ldflags \
  --with-terminfo-dirs=/etc/terminfo:/lib/terminfo:/usr/share/terminfo:/usr/lib/terminfo \
  --with-default-terminfo-dir=/usr/share/terminfo
make -j"$JOBS"
# Libraries, headers, .pc files (and the ncursesw6-config script).
make install.libs install.includes
# The database goes into the prefix, not into the run-time default /usr/share/terminfo.
make -C misc install.data ticdir="$PREFIX/share/terminfo"
# run_tic.sh adds lib/terminfo as an absolute symlink to /usr/share/terminfo: drop it.
rm -f "$PREFIX/lib/terminfo"
