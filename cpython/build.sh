# Builds CPython in the build container (no network) with every extension module
# built in (Setup.local) and installs it into $INSTALL_DIR. Inputs from the driver:
# PY_TARBALL, PY_TOPDIR, CONFIGURE_ARGS (one per line), and the toolchain variables.
tar xf "$SRC/$PY_TARBALL"
cd "$PY_TOPDIR"
# Our patches for this version (cpython-patches/, the driver stages only those whose
# header names it), in name order; exact context only, so a patch that no longer fits
# the source stops the build instead of landing somewhere else.
for p in "$RECIPE_DIR"/patches/*.patch; do
  [ -e "$p" ] || continue
  echo "applying $(basename "$p")"
  patch -p1 --forward --fuzz=0 --no-backup-if-mismatch < "$p"
done
cp "$RECIPE_DIR/Setup.local" Modules/Setup.local
# BUILD_TKINTER (from cpython/extensions.yaml): whether _tkinter is built for this
# target, and with it Tcl and Tk, whose script libraries the tree then carries.
if [ -n "$BUILD_TKINTER" ]; then cat "$RECIPE_DIR/tkinter-tcl-library.py" >> Lib/tkinter/__init__.py; fi

# Unversioned LLVM tools (llvm-ar for LTO, llvm-profdata for PGO) are found by
# configure on PATH: the build's LLVM's ($LLVM_BIN, from the driver), never another
# LLVM in the image (3.14's JIT finds its own, versioned).
export PATH="$LLVM_BIN:$PATH"
# Build-only flags go into the *_NODIST variables, which sysconfig does not hand to
# extension builds on users' machines.
export CFLAGS_NODIST="$CFLAGS_NODIST" LDFLAGS_NODIST="$LDFLAGS_NODIST"
# _tkinter's headers and static link line (its libraries are in $PREFIX/lib).
export TCLTK_CFLAGS="-I$PREFIX/include" TCLTK_LIBS="-ltk8.6 -ltcl8.6 -lX11 -lxcb -lXau -lz"
# Static libraries need their private dependencies on every link, configure's
# feature checks included (e.g. sqlite3 needs -lm, libedit needs -lncursesw).
export PKG_CONFIG="pkg-config --static"
# Every module is static (Setup.local says so too); with this, configure also links
# the HACL* hash code shared by _blake2, _hmac and _sha* once, from static archives.
export MODULE_BUILDTYPE=static
mapfile -t args <<< "$CONFIGURE_ARGS"
# A cross build (the driver gave --host): the build machine is this container's own.
if printf '%s\n' "${args[@]}" | grep -q '^--host='; then args+=("--build=$(./config.guess)"); fi
./configure "${args[@]}"
# --enable-shared (a target whose trees carry libpython): configure links the programs
# to libpython.so; ours link the same objects statically, as a build without it does (no
# library to find at start, no calls through the PLT), and libpython.so is still built
# from them for programs that embed Python. llvm-bolt lays out the interpreter alone:
# training runs it, never the library, which would get no profile.
if grep -q '^LINK_PYTHON_OBJS=\$(BLDLIBRARY)$' Makefile; then
  sed -i -e 's/^LINK_PYTHON_OBJS=\$(BLDLIBRARY)$/LINK_PYTHON_OBJS=$(LIBRARY_OBJS)/' \
    -e 's/^LINK_PYTHON_DEPS=\(.*\)$/LINK_PYTHON_DEPS=\1 $(LIBRARY_OBJS)/' \
    -e 's/^BOLT_BINARIES := .*$/BOLT_BINARIES := $(BUILDPYTHON)/' Makefile
  grep -q '^LINK_PYTHON_DEPS=.* \$(LIBRARY_OBJS)$' Makefile
fi
# macOS's libpython.dylib rule differs from the .so one: it links without the built-in
# modules' libraries (MODLIBS: OpenSSL, SQLite and the rest) and lets whatever is missing
# go unresolved (-undefined dynamic_lookup), which would fail in a program at run time,
# not here; it names the library by the build's prefix, not @rpath/ as a relocatable
# tree needs; and it writes versions as X.Y, which zig's linker refuses (X.Y.Z only).
if grep -q '^LDLIBRARY=.*\.dylib$' Makefile; then
  sed -i -e '/^\t \$(CC) -dynamiclib /{' \
    -e 's/ -undefined dynamic_lookup / /' \
    -e 's|-Wl,-install_name,\$(prefix)/lib/|-Wl,-install_name,@rpath/|' \
    -e 's/_version,\$(VERSION) /_version,$(VERSION).0 /g' \
    -e 's/ \$(DTRACE_OBJS) \$(SHLIBS) / $(DTRACE_OBJS) $(MODLIBS) $(SHLIBS) /' \
    -e '}' Makefile
  rule=$(grep -e ' -dynamiclib ' Makefile)
  grep -q -e '-install_name,@rpath/.*_version,\$(VERSION)\.0 .*\$(MODLIBS) \$(SHLIBS)' <<< "$rule"
  ! grep -q -e 'dynamic_lookup' <<< "$rule"
fi
# CPU_LEVEL_CHECK (toolchain.cpu_level_check): the file that refuses a CPU below the
# build's x86-64 level becomes one of the core's objects, so it is in the interpreter,
# libpython and the objects embed links (make-vars.txt's LIBRARY_OBJS).
if [ -n "$CPU_LEVEL_CHECK" ]; then
  cp "$RECIPE_DIR/$CPU_LEVEL_CHECK" Python/pyfreight_cpu_level.c
  sed -i 's|^PYTHON_OBJS=\t\\$|PYTHON_OBJS=\tPython/pyfreight_cpu_level.o \\|' Makefile
  grep -q '^PYTHON_OBJS=.Python/pyfreight_cpu_level\.o \\$' Makefile
fi
if [ -n "${PGO_PROFILE:-}" ]; then
  # A saved profile: put it where the profile-use step reads it and mark the
  # training as done, so make skips the instrumented build and the training run
  # and goes straight to the rebuild with the same flags and profile.
  cp "$PGO_PROFILE" code.profclangd
  touch profile-run-stamp
fi
if [ -n "${BOLT_PROFILE:-}" ]; then
  # A saved BOLT profile of the interpreter the saved PGO profile makes: build that
  # interpreter, then do what the Makefile's profile-bolt-stamp does after its own
  # instrumented run (the same llvm-bolt command, the profile under the same name),
  # and mark BOLT's training as done.
  make -j"$JOBS" profile-opt
  cp python python.prebolt
  cp "$BOLT_PROFILE" python.fdata
  make --no-print-directory -s -f Makefile -f "$RECIPE_DIR/print-vars.mk" pyfreight-bolt-apply
  touch profile-bolt-stamp
else
  make -j"$JOBS"
fi
bash -euo pipefail "$RECIPE_DIR/export-build.sh"
# compileall in one process: with parallel workers (CPython's default -j0) a .pyc can
# depend on which other files the same worker compiled first (a constant shared in one
# build, duplicated in the next), so archives would not reproduce. Serial costs ~30 s.
make install COMPILEALL_OPTS=-j1
# The merged profile of a PGO build is an output of its own (--pgo-profile reuses it).
if [ -f code.profclangd ]; then cp code.profclangd "$OUTPUT_DIR/pgo.profdata"; fi
# A bolt build's merged BOLT profile likewise (--bolt-profile).
if [ -f python.fdata ]; then cp python.fdata "$OUTPUT_DIR/bolt.fdata"; fi
# Run-time data the built-in modules need, kept relative to the interpreter:
# terminfo for curses/readline, the Tcl/Tk script libraries for tkinter (with Tcl's
# modules, tcl8: msgcat, which Tk's dialogs and `clock format -locale` use, and others).
mkdir -p "$INSTALL_DIR/share"
cp -R "$PREFIX/share/terminfo" "$INSTALL_DIR/share/terminfo"
if [ -n "$BUILD_TKINTER" ]; then cp -R "$PREFIX/lib/tcl8.6" "$PREFIX/lib/tk8.6" "$PREFIX/lib/tcl8" "$INSTALL_DIR/lib/"; fi
