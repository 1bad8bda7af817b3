tar xf "$SRC/libpthread-stubs_0.5.orig.tar.gz"
cd libpthread-stubs-0.5
./configure ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX"
make install
