# busybox's own kbuild: its defconfig, its host tools built with the image's clang (no
# gcc here; the gcc-version probe only warns). tc is left out: it wants kernel
# traffic-control headers newer than the sysroot's.
tar xjf "$SRC/busybox_1.37.0.orig.tar.bz2"
cd busybox-1.37.0
make HOSTCC=clang-19 defconfig
sed -i 's/^CONFIG_TC=y$/# CONFIG_TC is not set/' .config
make -j"$JOBS" HOSTCC=clang-19 CC="$CC" AR="$AR" STRIP="$STRIP" busybox
make HOSTCC=clang-19 CC="$CC" CONFIG_PREFIX="$PREFIX" install
