tar xf "$SRC/tk8.6_8.6.18.orig.tar.gz"
cd tk8.6.18/unix
# Our X11 is static: anything linked against it (configure's tests, wish) also
# needs libxcb and libXau.
# --disable-xft: no freetype/fontconfig/Xft here (core X fonts are used).
# --disable-xss: no libXss (screen saver extension) here.
./configure ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX" --disable-shared --enable-threads \
  --with-tcl="$PREFIX/lib" --x-includes="$PREFIX/include" --x-libraries="$PREFIX/lib" \
  --disable-xft --disable-xss LIBS="-lxcb -lXau"
make -j"$JOBS" binaries libraries
make install-binaries install-libraries install-headers
# tkConfig.sh describes the build folder too (TK_BUILD_*, TK_SRC_DIR): point
# those at the installed library and headers. It also records CFLAGS, whose
# -ffile-prefix-map names the build folder and means nothing to its users.
sed -i -e "s|$PWD|$PREFIX/lib|g" -e "s|${PWD%/unix}|$PREFIX/include|g" \
  -e "s| *-ffile-prefix-map=[^ ']*||g" "$PREFIX/lib/tkConfig.sh"
# tk.pc's static link line names only -lX11; our libX11.a also needs these.
sed -i "s|^Libs.private:.*|& -lxcb -lXau|" "$PREFIX/lib/pkgconfig/tk.pc"
