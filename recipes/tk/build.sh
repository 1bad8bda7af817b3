tar xf "$SRC/tk8.6_8.6.18.orig.tar.gz"
if [ "$TARGET_OS" = windows ]; then
  # Tk's Windows port (no X11), static like Tcl, against the Tcl of our recipe (its
  # build folder is gone: the installed headers stand in for Tcl's sources). tk.res.o
  # holds Tk's cursors and icons, which whatever links Tk statically links too.
  cd tk8.6.18/win
  # --enable-64bit: as for Tcl (recipes/tcl).
  ./configure --host="$CROSS_HOST" --prefix="$PREFIX" --disable-shared --enable-threads \
    --enable-64bit="${TCL_ENABLE_64BIT:-yes}" --with-tcl="$PREFIX/lib"
  make -j"$JOBS" TCL_GENERIC_DIR="$PREFIX/include" libtk86.a libtkstub86.a tk.res.o
  install -m 0644 libtk86.a libtkstub86.a tk.res.o "$PREFIX/lib/"
  make install-libraries
  exit 0
fi
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
