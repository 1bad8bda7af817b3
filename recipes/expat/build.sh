tar xf "$SRC/expat_2.8.3.orig.tar.gz"
cd libexpat-R_2_8_3/expat
# A snapshot of the git tag: configure is generated here (autoreconf).
./buildconf.sh
# Only the library: no xmlwf program, examples, tests, or DocBook man page.
./configure ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX" --disable-shared --enable-static \
  --without-docbook --without-examples --without-tests --without-xmlwf
make -j"$JOBS"
make install
