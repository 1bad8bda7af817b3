tar xf "$SRC/openssl_3.5.7.orig.tar.gz"
cd openssl-3.5.7
# no-shared: static libcrypto/libssl only. no-module: the legacy provider is built
#   into libcrypto instead of a loadable .so. no-tests, no-docs: not needed here.
# $OPENSSL_TARGET: OpenSSL's own name of the target (targets/*.yaml, recipe_env).
# --openssldir=/etc/ssl: the configuration and CA store of Debian-like hosts at run time.
# --libdir=lib: not lib64, so every recipe installs to the same place.
./Configure "$OPENSSL_TARGET" no-shared no-module no-tests no-docs \
  --prefix="$PREFIX" --libdir=lib --openssldir=/etc/ssl
# Libraries, headers and .pc files only: the openssl program is not needed.
make -j"$JOBS" build_libs
make install_dev
