# busybox's own kbuild: its defconfig, its host tools built with the image's clang (no
# gcc here; the gcc-version probe only warns). tc is left out: it wants kernel
# traffic-control headers newer than the sysroot's. So is SHA-1's hardware acceleration:
# 1.37's sha1_end names the x86 SHA-NI function outside the x86-only guard of its
# declaration, which fails to compile for any other architecture (these tools only
# check installs; their speed is moot).
tar xjf "$SRC/busybox_1.37.0.orig.tar.bz2"
cd busybox-1.37.0
make HOSTCC=clang-19 defconfig
sed -i -e 's/^CONFIG_TC=y$/# CONFIG_TC is not set/' \
  -e 's/^CONFIG_SHA1_HWACCEL=y$/# CONFIG_SHA1_HWACCEL is not set/' .config
# install links and strips busybox again: the same tools, or it falls back to the
# build machine's own strip, which cannot read another architecture's program.
tools=(HOSTCC=clang-19 CC="$CC" AR="$AR" STRIP="$STRIP")
make -j"$JOBS" "${tools[@]}" busybox
make "${tools[@]}" CONFIG_PREFIX="$PREFIX" install
