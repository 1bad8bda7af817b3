tar xf "$SRC/libedit_3.1-20250104.orig.tar.gz"
cd libedit-20250104-3.1
# configure looks for tgetent in -lncurses, -lcurses, -ltermcap, -ltinfo; our
# ncurses recipe provides only the wide-character libncursesw: look for that
# instead (this also puts -lncursesw into libedit.pc's Libs.private).
sed -i 's/-lncurses\b/-lncursesw/g' configure
# ncursesw keeps its headers (curses.h, term.h, termcap.h) in include/ncursesw/.
# --disable-examples: the demo programs are not shipped.
./configure ${CROSS_HOST:+--host="$CROSS_HOST"} --prefix="$PREFIX" --disable-shared --enable-static --disable-examples \
  CPPFLAGS="$CPPFLAGS -I$PREFIX/include/ncursesw"
make -j"$JOBS"
make install
