tar xf "$SRC/xtrans_1.4.0.orig.tar.gz"
cd xtrans-1.4.0
# Headers, xtrans.pc and xtrans.m4 only: nothing is compiled here.
./configure ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX" --disable-docs --without-xmlto --without-fop
make install
