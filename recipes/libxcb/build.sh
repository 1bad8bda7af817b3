tar xf "$SRC/libxcb_1.17.0.orig.tar.gz"
cd libxcb-1.17.0
# The generator (c_client.py) imports xcbgen from xcb-proto.pc's pythondir; no .pyc
# may land in $PREFIX, or it would become part of this artifact.
export PYTHONDONTWRITEBYTECODE=1
# Only the core protocol library: libX11 (and so Tk) needs no XCB extension library.
exts="composite damage dbe dpms dri2 dri3 glx present randr record render resource
      screensaver shape shm sync xfixes xfree86-dri xinerama xinput xkb xtest xv xvmc"
./configure ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX" --disable-shared --enable-static \
  --disable-devel-docs --without-doxygen PYTHON=python3 \
  $(for e in $exts; do printf -- '--disable-%s ' "$e"; done)
make -j"$JOBS"
make install
