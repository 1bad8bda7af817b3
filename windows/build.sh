# Builds CPython for Windows in the build container (no network) from its own Visual
# Studio projects: windows.mk, which pyfreight/cpython/windows_projects.py wrote from
# PCbuild/*.vcxproj, compiles and links; this script does what the projects' own build
# steps would (the frozen modules), runs it, and lays the tree out in $INSTALL_DIR as
# Windows users know it: python.exe at the top, Lib/, DLLs/, include/, libs/.
# Inputs from the driver: PY_TARBALL, PY_TOPDIR, FROZEN_DIR, CPYTHON_CFLAGS (the build
# option's: -flto=thin for lto, the profile for pgo), CPYTHON_LDFLAGS (the profile
# runtime, for a pgo build's instrumented interpreter), PGO_PROFILE, COMPILER_LLVM,
# REDISTRIBUTED_DLLS, PYTHON_MINOR, PYCONFIG_DIR and DISABLE_GIL (3.13's generated pyconfig.h),
# PIP_LAUNCHER and PIP_INTERPRETER (targets/*.yaml pe.launchers) and the toolchain
# variables.

# LTO objects are the compiler's LLVM bitcode, and PYTHON.json says which LLVM from the
# target file (sysroot.zig.llvm): the compiler must be that one.
llvm=$($CC --version | sed -n 's/^clang version \([0-9]*\)\..*/\1/p')
if [ "$llvm" != "$COMPILER_LLVM" ]; then
  echo "the compiler is LLVM ${llvm:-?}, but the target file says $COMPILER_LLVM (sysroot.zig.llvm): correct it" >&2
  exit 1
fi
tar xf "$SRC/$PY_TARBALL"
cd "$PY_TOPDIR"
source_dir="$PWD"
for p in "$RECIPE_DIR"/patches/*.patch; do
  [ -e "$p" ] || continue
  echo "applying $(basename "$p")"
  patch -p1 --forward --fuzz=0 --no-backup-if-mismatch < "$p"
done
# The resource scripts name their icons with Windows' separator (icons\python.ico),
# which LLVM's resource compiler ($RC) reads here as part of the file's name.
sed -i 's|"icons\\|"icons/|' PC/*.rc

# 3.13's projects write pyconfig.h from PC/pyconfig.h.in (pythoncore's _UpdatePyconfig
# target) into a folder every project searches ($(GeneratedPyConfigDir), PYCONFIG_DIR
# here), defining Py_GIL_DISABLED for a free-threaded build; later releases ship
# PC/pyconfig.h itself.
pyconfig="$source_dir/PC/pyconfig.h"
if [ ! -e "$pyconfig" ]; then
  mkdir -p "$PYCONFIG_DIR"
  pyconfig="$PYCONFIG_DIR/pyconfig.h"
  gil='/\* #define Py_GIL_DISABLED 1 \*/'
  if [ "$DISABLE_GIL" = true ]; then
    grep -q "^$gil\$" PC/pyconfig.h.in || { echo "PC/pyconfig.h.in has no '$gil' line to enable" >&2; exit 1; }
    sed "s|^$gil\$|#define Py_GIL_DISABLED 1|" PC/pyconfig.h.in > "$pyconfig"
  else
    cp PC/pyconfig.h.in "$pyconfig"
  fi
fi

# The frozen modules are marshalled code objects, the same bytes on every platform:
# a native _freeze_module of this very source writes them, as the projects' own
# _freeze_module.exe would on Windows.
# Nothing of the Windows toolchain's environment reaches this plain native build.
native() { env -i PATH="$PATH" HOME="$HOME" LC_ALL=C.UTF-8 PKG_CONFIG_LIBDIR=/nonexistent "$@"; }
mkdir -p ../native
(
  cd ../native
  native CC="$BUILD_CC" "$source_dir/configure" --without-ensurepip > configure.log
  native make -j"$JOBS" Programs/_freeze_module > freeze-module.log
  frozen=$(native make -s -f Makefile -f - print-frozen <<< 'print-frozen: ; @echo $(FROZEN_FILES_OUT)')
  # shellcheck disable=SC2086  # a list of file names
  native make -j"$JOBS" $frozen > frozen.log
  # The native interpreter of the same source, with the shared modules compileall needs
  # (_struct; unicodedata for \N{...} escapes): it compiles the stdlib's .pyc files below.
  suffix=$(native make -s -f Makefile -f - print-suffix <<< 'print-suffix: ; @echo $(EXT_SUFFIX)')
  native make -j"$JOBS" python "Modules/_struct$suffix" "Modules/unicodedata$suffix" > native-python.log
  mkdir -p "$FROZEN_DIR/Python"
  cp -r Python/frozen_modules "$FROZEN_DIR/Python/"
)

# getbuildinfo.c's date and time are the source's (zig refuses __DATE__ and __TIME__).
build_date=$(date -u -d "@$SOURCE_DATE_EPOCH" '+%b %d %Y')
build_time=$(date -u -d "@$SOURCE_DATE_EPOCH" '+%H:%M:%S')
# Windows' file names are case-insensitive, and CPython's sources name some headers in a
# case mingw-w64's do not have (<Unknwn.h> for unknwn.h): a folder searched last holds
# each such name as a link to the header that exists.
header_case="$PWD/../header-case"
mkdir -p "$header_case"
mapfile -t search < <($CC -E -v -x c /dev/null 2>&1 |
  sed -n '/^#include <...> search starts here:/,/^End of search list/p' | sed -n 's/^ //p')
grep -rhoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<[A-Za-z0-9_.]+>' Include PC Python Modules |
  sed -E 's/.*<(.*)>/\1/' | sort -u | while read -r name; do
  for d in "${search[@]}"; do [ -e "$d/$name" ] && continue 2; done
  for d in "${search[@]}"; do
    match=$(find "$d" -maxdepth 1 -iname "$name" -print -quit)
    if [ -n "$match" ]; then ln -s "$match" "$header_case/$name"; echo "header $name: $match"; break; fi
  done
done

mkdir -p ../windows-build
cd ../windows-build
make -f "$RECIPE_DIR/windows.mk" -j"$JOBS" BUILD_DATE="$build_date" BUILD_TIME="$build_time" \
  CFLAGS="$CFLAGS $CPYTHON_CFLAGS -idirafter $header_case" LDFLAGS="$LDFLAGS $CPYTHON_LDFLAGS"

# The tree. The interpreter finds its prefix beside python.exe (Lib/os.py), so the
# tree runs from any folder. Each project's output by its name (a free-threaded build's
# are python3.14t.exe, python314t.dll, python3t.dll, venvlaunchert.exe).
output() { make -s -f "$RECIPE_DIR/windows.mk" "print-OUTPUT_$1"; }
# Scripts/ is where pip puts console scripts (sysconfig's `scripts` path), as the
# Windows installer lays it out.
install -d "$INSTALL_DIR/DLLs" "$INSTALL_DIR/libs" "$INSTALL_DIR/include" "$INSTALL_DIR/Scripts"
# shellcheck disable=SC2046  # the forwarders: a list of file names
install -m 0755 "$(output python)" "$(output pythonw)" "$(output pythoncore)" $(output forwarders) "$INSTALL_DIR/"
# python.exe and pythonw.exe at the top whatever the build, where uv and other clients
# of these archives start the interpreter: copies of a free-threaded build's programs.
for program in python pythonw; do
  [ -e "$INSTALL_DIR/$program.exe" ] || install -m 0755 "$(output "$program")" "$INSTALL_DIR/$program.exe"
done
# A vendor's DLLs shipped as they are (targets/*.yaml pe.redistributed, handed over
# beside this script): the Visual C++ runtime beside python.exe, where Windows finds it
# for the extension modules of every MSVC-built wheel, as python.org's installer puts it.
for dll in $REDISTRIBUTED_DLLS; do
  install -m 0755 "$RECIPE_DIR/$dll" "$INSTALL_DIR/"
done
install -m 0644 libs/*.lib "$INSTALL_DIR/libs/"
cp -r "$source_dir/Lib" "$INSTALL_DIR/Lib"
# pip, as Windows' installer puts it in (ensurepip --default-pip): from the wheel the source
# bundles, by the build container's python3, with console scripts that find python.exe
# relative to themselves (install-pip.py says how).
if [ -n "$PIP_LAUNCHER" ]; then
  native SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" python3 -B -I "$RECIPE_DIR/install-pip.py" \
    "$INSTALL_DIR" "$PYTHON_MINOR" "$PIP_LAUNCHER" "$PIP_INTERPRETER"
fi
# venv copies these into an environment as its python.exe and pythonw.exe.
install -m 0755 "$(output venvlauncher)" "$(output venvwlauncher)" "$INSTALL_DIR/Lib/venv/scripts/nt/"
# The stdlib's bytecode, as `make install` writes it on Unix and Windows' installer at
# install time: bytecode is the same on every platform, so the native interpreter of
# this source writes it. In one process (-j1), as on Unix, so the files reproduce;
# checked-hash, so no file's time is in them; named below Lib/ as the tree has it (the
# import system puts the real path in when it loads them).
native PYTHONPATH="$source_dir/../native/Modules" "$source_dir/../native/python" -Wi -m compileall -q -o 0 -o 1 -o 2 -j1 \
  --invalidation-mode checked-hash -s "$INSTALL_DIR" -x 'bad_coding|badsyntax|site-packages' \
  "$INSTALL_DIR/Lib"
# pip's bytecode as pip writes it when it installs itself: unoptimized only.
native PYTHONPATH="$source_dir/../native/Modules" "$source_dir/../native/python" -Wi -m compileall -q -o 0 -j1 \
  --invalidation-mode checked-hash -s "$INSTALL_DIR" "$INSTALL_DIR/Lib/site-packages"
# Tcl's and Tk's script libraries where _tkinter looks for them, tcl\tcl8.6 below the
# prefix (Tk finds tk8.6 beside it), with Tcl's modules (tcl8), as Windows' installer
# lays them out.
install -d "$INSTALL_DIR/tcl"
cp -R "$PREFIX/lib/tcl8.6" "$PREFIX/lib/tk8.6" "$PREFIX/lib/tcl8" "$INSTALL_DIR/tcl/"
cp -r "$source_dir/Include/." "$INSTALL_DIR/include/"
cp "$pyconfig" "$INSTALL_DIR/include/pyconfig.h"
cp "$source_dir/LICENSE" "$INSTALL_DIR/LICENSE.txt"
# What packers link against: every object, as the full archive will carry them.
mkdir -p "$OUTPUT_DIR/build"
cp -r obj "$OUTPUT_DIR/build/"
# The Makefile, the table of built-in modules (a packer's own config.c starts from it)
# and the build's account of which objects are the core and which each module's.
cp "$RECIPE_DIR/windows.mk" "$RECIPE_DIR/config.c" "$RECIPE_DIR/build-info.json" "$OUTPUT_DIR/build/"
# A pgo build's merged profile, kept with the build (`reproduce` rebuilds from it).
if [ -n "$PGO_PROFILE" ]; then cp "$PGO_PROFILE" "$OUTPUT_DIR/pgo.profdata"; fi
