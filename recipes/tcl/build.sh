tar xf "$SRC/tcl8.6_8.6.18+dfsg.orig.tar.gz"
cd tcl8.6.18/unix
# --disable-shared: libtcl8.6.a (and its stub library). zlib comes from our zlib
# recipe, found through CPPFLAGS/LDFLAGS. The +dfsg tarball has no pkgs/ to build.
./configure ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX" --disable-shared --enable-threads
make -j"$JOBS" binaries libraries
# Library, tclsh, tclConfig.sh, tcl.pc, script library (with tzdata and msgs) and
# public headers; no man pages.
make install-binaries install-libraries install-headers
# tclConfig.sh describes the build folder too (TCL_BUILD_*, TCL_SRC_DIR): point
# those at the installed library and headers (Tk reads TCL_SRC_DIR, but only
# needs the public headers). It also records CFLAGS, whose
# -ffile-prefix-map names the build folder and means nothing to its users.
sed -i -e "s|$PWD|$PREFIX/lib|g" -e "s|${PWD%/unix}|$PREFIX/include|g" \
  -e "s| *-ffile-prefix-map=[^ ']*||g" "$PREFIX/lib/tclConfig.sh" "$PREFIX/lib/tclooConfig.sh"
