tar xf "$SRC/tcl8.6_8.6.18+dfsg.orig.tar.gz"
if [ "$TARGET_OS" = windows ]; then
  # Tcl's Windows port, static (libtcl86.a, with the STATIC_BUILD its users define too).
  # ZLIB_OBJS empty and our zlib's headers: Tcl's copy of zlib (compat/zlib) is not
  # compiled in, so the interpreter holds one zlib, the one the SBOM names.
  cd tcl8.6.18/win
  # $TCL_ENABLE_64BIT (optional, targets/*.yaml recipe_env): the machine Tcl's configure
  # takes as --enable-64bit's value where "yes" (x86_64) is not it; it leaves out
  # Tcl's x86 CPUID code for another machine.
  ./configure --host="$CROSS_HOST" --prefix="$PREFIX" --disable-shared --enable-threads \
    --enable-64bit="${TCL_ENABLE_64BIT:-yes}"
  # tcl::pkgconfig's folders (CFG_INSTALL_*, CFG_RUNTIME_*) would be this build's
  # prefix: recorded as none ("").
  unrecorded=(LIB_INSTALL_DIR_NATIVE= BIN_INSTALL_DIR_NATIVE= SCRIPT_INSTALL_DIR_NATIVE= INCLUDE_INSTALL_DIR_NATIVE=
    MAN_INSTALL_DIR_NATIVE= libdir_native= bindir_native= TCL_LIBRARY_NATIVE= includedir_native= mandir_native=)
  make -j"$JOBS" ZLIB_OBJS= ZLIB_DIR_NATIVE="$PREFIX/include" "${unrecorded[@]}" libtcl86.a libtclstub86.a
  install -d "$PREFIX/lib"
  install -m 0644 libtcl86.a libtclstub86.a "$PREFIX/lib/"
  # Headers, and the script library (lib/tcl8.6, its modules in lib/tcl8) as Tcl
  # installs it; Tcl's install copies time zones and message catalogues with a tclsh,
  # which a cross build does not have (TCL_EXE=true): they are copied here.
  make install-headers install-libraries TCL_EXE=true
  cp -r ../library/tzdata ../library/msgs "$PREFIX/lib/tcl8.6/"
  # tclConfig.sh, for Tk's configure: its build folders become the installed ones.
  sed -e "s|$PWD|$PREFIX/lib|g" -e "s|${PWD%/win}|$PREFIX/include|g" tclConfig.sh >"$PREFIX/lib/tclConfig.sh"
  exit 0
fi
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
