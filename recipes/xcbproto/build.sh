# Two Debian binary packages (architecture-independent; dpkg-deb -x needs no root):
# the protocol XML with xcb-proto.pc, and the xcbgen module libxcb's generator imports.
dpkg-deb -x "$SRC/xcb-proto_1.17.0-1_all.deb" xcb-proto
dpkg-deb -x "$SRC/python3-xcbgen_1.17.0-1_all.deb" python3-xcbgen
mkdir -p "$PREFIX/share/pkgconfig" "$PREFIX/lib/python3/dist-packages"
cp -R xcb-proto/usr/share/xcb "$PREFIX/share/"
cp -R python3-xcbgen/usr/lib/python3/dist-packages/xcbgen "$PREFIX/lib/python3/dist-packages/"
# Debian's .pc says prefix=/usr and a pythondir (python3.11/site-packages) where
# xcbgen is not: point both at what is installed here.
sed -e "s|^prefix=/usr\$|prefix=$PREFIX|" \
    -e 's|^pythondir=.*|pythondir=${pc_sysrootdir}${PYTHON_PREFIX}/lib/python3/dist-packages|' \
    xcb-proto/usr/share/pkgconfig/xcb-proto.pc > "$PREFIX/share/pkgconfig/xcb-proto.pc"
