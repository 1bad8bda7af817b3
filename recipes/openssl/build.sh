tar xf "$SRC/openssl_3.5.7.orig.tar.gz"
cd openssl-3.5.7
# no-shared: static libcrypto/libssl only. no-module: the legacy provider is built
#   into libcrypto instead of a loadable .so. no-tests, no-docs: not needed here.
# $OPENSSL_TARGET: OpenSSL's own name of the target (targets/*.yaml, recipe_env).
# --libdir=lib: not lib64, so every recipe installs to the same place.
# Linux: the CPU probe runs at OpenSSL's first initialization (ossl_init_base, before
# any of its code reads what the probe found) instead of in a constructor of every
# process, which an interpreter that never touches OpenSSL paid at each start (cpuid
# traps to the hypervisor in a VM: about 70 us; docs/performance.md).
if [ "$TARGET_OS" = linux ]; then
  perl -0pi -e 's/\.section\t\.init\n\tcall\tOPENSSL_cpuid_setup\n//' crypto/x86_64cpuid.pl
  sed -i 's/^void OPENSSL_cpuid_setup(void) __attribute__((constructor));$/void OPENSSL_cpuid_setup(void);/' crypto/armcap.c
  if grep -q 'call\tOPENSSL_cpuid_setup' crypto/x86_64cpuid.pl || grep -q '__attribute__((constructor))' crypto/armcap.c; then
    echo "OpenSSL's CPU probe is still a constructor: the edits above no longer fit this source" >&2
    exit 1
  fi
fi
# $OPENSSL_OPTIONS (optional): the target's own further Configure options, for a target
# OpenSSL names by a near relative (targets/*.yaml, recipe_env).
read -ra target_options <<<"${OPENSSL_OPTIONS:-}"
./Configure "$OPENSSL_TARGET" "${target_options[@]}" no-shared no-module no-tests no-docs \
  --prefix="$PREFIX" --libdir=lib
# OpenSSL records its compile line in the library (`openssl version -f`); that line
# names our build folders (--sysroot, -I$PREFIX/include), so record the target alone.
# Written after Configure, it is newer than what make would rebuild it from.
perl util/mkbuildinf.pl "not recorded" "$OPENSSL_TARGET" >crypto/buildinf.h
# OpenSSL's folders at run time, the target's (targets/*.yaml): $OPENSSL_DIR holds the
# configuration and CA store, $OPENSSL_MODULES_DIR engines and providers beyond those
# built in (the defaults would be below $PREFIX, a build folder). Given to make, not
# Configure: Configure takes a Windows path for a relative one and puts $PREFIX before it.
dirs=(OPENSSLDIR="$OPENSSL_DIR" ENGINESDIR="$OPENSSL_MODULES_DIR" MODULESDIR="$OPENSSL_MODULES_DIR")
# Libraries, headers and .pc files only: the openssl program is not needed.
make -j"$JOBS" build_libs "${dirs[@]}"
make install_dev "${dirs[@]}"
if grep -aoE ".{0,60}$PREFIX.{0,20}" "$PREFIX/lib/libcrypto.a" "$PREFIX/lib/libssl.a" >&2; then
  echo "libcrypto.a or libssl.a still names $PREFIX (above)" >&2
  exit 1
fi
