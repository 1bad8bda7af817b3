# musl builds itself freestanding (-nostdinc, -nostdlib), so the build image's own
# sysroot is never read. Its own flags, not the toolchain's: libc.so must export every
# public function (no -fvisibility=hidden), and _FORTIFY_SOURCE means nothing to musl.
# The compiler runtime (LIBCC) is the one $CC links programs with (compiler-rt's
# builtins), not the build image's gcc.
tar xf "$SRC/musl_1.2.5.orig.tar.gz"
cd musl-1.2.5
CFLAGS="-O2 -ffile-prefix-map=$PWD=musl-1.2.5" LIBCC="$($CC -print-libgcc-file-name)" \
  ./configure --target="$HOST_TRIPLE" --prefix="$PREFIX" --syslibdir="$PREFIX/lib" --disable-wrapper
make -j"$JOBS"
make install
# The loader is libc.so itself; install made it an absolute link into this prefix.
for loader in "$PREFIX"/lib/ld-musl-*.so.1; do ln -sf libc.so "$loader"; done
