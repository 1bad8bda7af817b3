tar xf "$SRC/util-linux_2.41.5.orig.tar.xz"
cd util-linux-2.41.5
# Only libuuid: --disable-all-programs turns off every other library and program,
# and the --without-* options skip probing for libraries none of it uses.
# --localstatedir/--runstatedir: compiled into libuuid as the host's paths of its
#   clock file (/var/lib/libuuid/clock.txt) and uuidd socket (/run/uuidd/request),
#   which would otherwise point into $PREFIX.
# --disable-year2038: where time_t is 32-bit (armv7's glibc before 2.34 has no 64-bit
#   time_t to switch to), keep the ABI CPython and the C library have instead of
#   stopping; a no-op where time_t is 64-bit.
./configure ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX" --localstatedir=/var --runstatedir=/run --disable-year2038 \
  --disable-shared --enable-static --disable-all-programs --enable-libuuid \
  --disable-nls --disable-asciidoc --disable-poman --disable-bash-completion \
  --disable-makeinstall-chown --without-python --without-systemd --without-udev \
  --without-selinux --without-readline --without-ncursesw --without-tinfo \
  --without-libmagic --without-econf --without-user --without-cryptsetup
make -j"$JOBS"
make install
