tar xf "$SRC/libx11_1.8.12.orig.tar.gz"
cd libX11-1.8.12
# Not cross-compiling, so the build-time tool makekeys is compiled with the same
# sysroot'ed $CC and flags, and runs here.
# --disable-specs, --without-xmlto/--without-fop: no documentation tools in the image.
# --disable-loadable-i18n: input methods are compiled in, no .so modules.
# --disable-xf86bigfont: an obsolete font-over-shared-memory extension Tk never needs.
./configure ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX" --disable-shared --enable-static \
  --disable-specs --without-xmlto --without-fop --without-xsltproc \
  --disable-loadable-i18n --disable-xf86bigfont
make -j"$JOBS"
make install
