# zlib's configure is its own script, not autoconf: --static makes only libz.a.
tar xf "$SRC/zlib_1.3.dfsg+really1.3.2.orig.tar.gz"
cd zlib-1.3.dfsg+really1.3.2
# It knows the target by CHOST, only for Windows (mingw: no -fPIC shared parts, .exe).
if [ "$TARGET_OS" = windows ]; then export CHOST="$CROSS_HOST"; fi
# --disable-crcvx: on IBM Z, configure would add the vector CRC-32 of contrib/crc32vx,
# which Debian's DFSG tarball leaves out (a no-op on other machines).
./configure --prefix="$PREFIX" --static --disable-crcvx
make -j"$JOBS" libz.a
make install
# On Windows the installed zconf.h must not include unistd.h, as Windows builds of zlib
# do not: mingw-w64's unistd.h declares POSIX threads, which CPython's headers (after
# zlib.h in zlibmodule.c and binascii.c) then take for granted.
if [ "$TARGET_OS" = windows ]; then
  sed -i '/was set to #if 1 by .\/configure/{N;s|^#if 1\(.*\)\n#  define Z_HAVE_UNISTD_H|#if 0\1\n#  define Z_HAVE_UNISTD_H|}' \
    "$PREFIX/include/zconf.h"
  if grep -B1 '^#  define Z_HAVE_UNISTD_H' "$PREFIX/include/zconf.h" | grep -q '^#if 1'; then
    echo "zconf.h still includes unistd.h: its text changed; update this edit" >&2
    exit 1
  fi
fi
