# A Debian binary package of headers only: dpkg-deb -x unpacks it without root.
dpkg-deb -x "$SRC/x11proto-dev_2024.1-1_all.deb" x11proto-dev
mkdir -p "$PREFIX/include" "$PREFIX/share/pkgconfig"
cp -R x11proto-dev/usr/include/. "$PREFIX/include/"
# Debian's .pc files say prefix=/usr: ours are installed in $PREFIX.
for pc in x11proto-dev/usr/share/pkgconfig/*.pc; do
  sed "s|^prefix=/usr\$|prefix=$PREFIX|" "$pc" > "$PREFIX/share/pkgconfig/${pc##*/}"
done
