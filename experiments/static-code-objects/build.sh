#!/bin/sh
# build.sh GENERATED.c OUTPUT_EXE  -- compile generated static code + main.c and link against the archive's libpython (thin LTO bitcode)
set -e
D=$(cd $(dirname $0) && pwd)
A=$D/archive/python
INC=$A/install/include/python3.14
clang-19 -c -O1 -I$INC "$1" -o "${1%.c}.o"
clang-19 -c -O2 -I$INC $D/main.c -o $D/t/main.o
clang-19 -O2 -flto=thin -fuse-ld=lld -Wl,--thinlto-cache-dir=$D/ltocache -Wl,--thinlto-jobs=2 -Wl,-export-dynamic \
   $D/t/main.o "${1%.c}.o" $(sed "s|archive/|$D/archive/|g" "$D/libs.txt") -o "$2"
