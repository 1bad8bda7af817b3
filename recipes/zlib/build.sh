# zlib's configure is its own script, not autoconf: --static makes only libz.a.
tar xf "$SRC/zlib_1.3.dfsg+really1.3.2.orig.tar.gz"
cd zlib-1.3.dfsg+really1.3.2
# It knows the target by CHOST, only for Windows (mingw: no -fPIC shared parts, .exe).
if [ "$TARGET_OS" = windows ]; then export CHOST="$CROSS_HOST"; fi
./configure --prefix="$PREFIX" --static
make -j"$JOBS" libz.a
make install
