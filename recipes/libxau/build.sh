tar xf "$SRC/libxau_1.0.11.orig.tar.gz"
cd libXau-1.0.11
./configure ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX" --disable-shared --enable-static
make -j"$JOBS"
make install
