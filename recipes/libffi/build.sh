tar xf "$SRC/libffi_3.5.2.orig.tar.gz"
cd libffi-3.5.2
# A git snapshot: configure is generated here (autoreconf, from the build image).
./autogen.sh
# --disable-docs: the texinfo manual is not shipped (and needs makeinfo).
# --disable-multi-os-directory: install into lib/, not lib/../lib64 as
#   "$CC -print-multi-os-directory" would choose.
./configure ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX" --disable-shared --enable-static \
  --disable-docs --disable-multi-os-directory
make -j"$JOBS"
make install
