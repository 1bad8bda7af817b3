tar xf "$SRC/mpdecimal_4.0.1.orig.tar.gz"
cd mpdecimal-4.0.1
# Only the C library libmpdec.a (with its .pc): --disable-cxx skips libmpdec++,
# which CPython does not use.
./configure ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX" --disable-shared --enable-static --disable-cxx
make -j"$JOBS"
make install
