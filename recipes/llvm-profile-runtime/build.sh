# compiler-rt/lib/profile as its CMakeLists.txt builds it for WIN32 (PROFILE_SOURCES, the
# platform files guarded by their own #ifdefs, and WindowsMMap.c), with the target's
# compiler: clang's -fprofile-instr-generate objects reference __llvm_profile_runtime,
# which InstrProfilingRuntime.cpp defines, so linking this archive is all a program needs.
top=llvm-toolchain-22_22.1.8/compiler-rt
tar xf "$SRC/llvm-toolchain-22_22.1.8.orig.tar.xz" "$top/lib/profile" "$top/include" "$top/LICENSE.TXT"
cd "$top/lib/profile"
sources=(InstrProfiling.c InstrProfilingInternal.c InstrProfilingBuffer.c InstrProfilingMerge.c
  InstrProfilingMergeFile.c InstrProfilingNameVar.c InstrProfilingVersionVar.c InstrProfilingWriter.c
  InstrProfilingPlatformAIX.c InstrProfilingPlatformDarwin.c InstrProfilingPlatformFuchsia.c
  InstrProfilingPlatformLinux.c InstrProfilingPlatformOther.c InstrProfilingPlatformWindows.c
  GCDAProfiling.c InstrProfilingFile.c InstrProfilingUtil.c InstrProfilingValue.c WindowsMMap.c)
flags=(-I../../include -I. -DCOMPILER_RT_HAS_ATOMICS=1)
objects=()
for c in "${sources[@]}"; do
  $CC $CFLAGS "${flags[@]}" -c "$c" -o "${c%.c}.o"
  objects+=("${c%.c}.o")
done
$CXX $CXXFLAGS "${flags[@]}" -fno-exceptions -fno-rtti -c InstrProfilingRuntime.cpp -o InstrProfilingRuntime.o
$AR rcD libclang_rt.profile.a "${objects[@]}" InstrProfilingRuntime.o
install -Dm644 libclang_rt.profile.a "$PREFIX/lib/libclang_rt.profile.a"
