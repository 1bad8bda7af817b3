tar xf "$SRC/libzstd_1.5.7+dfsg.orig.tar.xz"
cd zstd-1.5.7
# Plain Makefile, no configure. Only the static library, headers and .pc: the
# default "lib" target would also build libzstd.so, and the zstd CLI is not needed.
# The -mt suffix builds libzstd.a multi-threaded (upstream's static default is
# single-threaded), so the zstd module's nb_workers parameter works.
make -C lib -j"$JOBS" libzstd.a-mt
# MT=1: the .pc then puts -pthread in Libs, as the multi-threaded library needs.
make -C lib install-static install-includes install-pc PREFIX="$PREFIX" MT=1
