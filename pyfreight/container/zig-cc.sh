#!/usr/bin/env bash
# $CC and $CXX of a zig sysroot (installed as /sysroot/bin/zig-cc and zig-c++): zig's
# own cc or c++, with two differences in a compile (-c) of one source:
# - with no -o it writes NAME.o, as every Unix compiler does and makefiles expect, where
#   zig would write NAME.obj for Windows;
# - the object's CodeView record of its own name (written with Control Flow Guard) says
#   the object's file name, where zig would put the random name of a file in its cache:
#   the same source must give the same bytes.
set -euo pipefail
compile_only=0
output=""
next_is_output=0
sources=()
for argument in "$@"; do
  if [ "$next_is_output" = 1 ]; then
    output="$argument"
    next_is_output=0
    continue
  fi
  case "$argument" in
    -c) compile_only=1 ;;
    -o) next_is_output=1 ;;
    -*) ;;
    *.c | *.cc | *.cpp | *.cxx | *.s | *.S) sources+=("$argument") ;;
  esac
done
if [ "$compile_only" = 1 ] && [ "${#sources[@]}" = 1 ]; then
  if [ -z "$output" ]; then
    output="${sources[0]##*/}"
    output="${output%.*}.o"
    set -- "$@" -o "$output"
  fi
  set -- "$@" -Xclang "-object-file-name=${output##*/}"
fi
exec /sysroot/zig/zig "${0##*/zig-}" "$@"
