tar xf "$SRC/xz-utils_5.8.4.orig.tar.xz"
cd xz-5.8.4
# Only liblzma: the command-line tools, scripts, docs and translations are not
# part of what CPython links.
./configure ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX" --disable-shared --enable-static \
  --disable-xz --disable-xzdec --disable-lzmadec --disable-lzmainfo \
  --disable-lzma-links --disable-scripts --disable-doc --disable-nls
make -j"$JOBS"
make install
