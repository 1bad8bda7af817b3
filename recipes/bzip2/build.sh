tar xf "$SRC/bzip2_1.0.8.orig.tar.gz"
cd bzip2-1.0.8
# No configure: the Makefile's own CFLAGS (-O2 -g -D_FILE_OFFSET_BITS=64) are
# replaced by ours, so the large-file flag is passed again. Only libbz2.a: the
# bzip2 programs and the shared library (Makefile-libbz2_so) are not wanted.
make -j"$JOBS" libbz2.a CC="$CC" AR="$AR" RANLIB="$RANLIB" \
  CFLAGS="$CFLAGS $CPPFLAGS -D_FILE_OFFSET_BITS=64"
# Upstream has no install target for the library alone, and no .pc file:
# install by hand, with a bzip2.pc like Debian's so pkg-config finds it.
install -Dm644 bzlib.h "$PREFIX/include/bzlib.h"
install -Dm644 libbz2.a "$PREFIX/lib/libbz2.a"
mkdir -p "$PREFIX/lib/pkgconfig"
cat > "$PREFIX/lib/pkgconfig/bzip2.pc" <<PC
prefix=$PREFIX
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: bzip2
Description: Lossless, block-sorting data compression library
Version: 1.0.8
Libs: -L\${libdir} -lbz2
Cflags: -I\${includedir}
PC
