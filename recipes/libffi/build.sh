tar xf "$SRC/libffi_3.5.2.orig.tar.gz"
cd libffi-3.5.2
# RISC-V: a float argument or result passes NaN-boxed in a 64-bit register; 3.5.2 boxes
# it with an asm that clang compiles as a conversion to double, so every float ctypes
# passed arrived as NaN (CPython's test_ctypes under qemu). Only src/riscv is touched.
patch -p1 <"$RECIPE_DIR/riscv-float-nan-boxing.patch"
# Arm64 Windows: closures flush the instruction cache with Windows' own call; 3.5.2 asks
# clang (which says it is GNU C) for __clear_cache, which no UCRT runtime has. Only the
# _WIN32 branch of src/aarch64 is touched.
patch -p1 <"$RECIPE_DIR/windows-flush-icache.patch"
# A git snapshot: configure is generated here (autoreconf, from the build image).
./autogen.sh
# --disable-docs: the texinfo manual is not shipped (and needs makeinfo).
# --disable-multi-os-directory: install into lib/, not lib/../lib64 as
#   "$CC -print-multi-os-directory" would choose.
# Linux: closures in memory libffi maps for them, as Debian, Ubuntu, Arch and Fedora
# build it, rather than static trampolines mapped from the executable's own file: those
# keep a descriptor of the executable open in every process that imports ctypes
# (cpython#135893), and BOLT's rewriting of the interpreter moves the code they map.
linux_only=()
if [ "$TARGET_OS" = linux ]; then linux_only=(--disable-exec-static-tramp); fi
./configure ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX" --disable-shared --enable-static \
  --disable-docs --disable-multi-os-directory "${linux_only[@]}"
make -j"$JOBS"
make install
