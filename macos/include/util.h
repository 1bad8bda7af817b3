/* pyfreight's <util.h>: the pseudo-terminal calls of BSD's libutil that macOS has in
 * libSystem, as Modules/posixmodule.c uses them (os.openpty, os.forkpty, os.login_tty).
 * The pinned zig's macOS headers lack the header; written from the documented interface
 * (openpty(3)), not copied. */
#ifndef PYFREIGHT_UTIL_H
#define PYFREIGHT_UTIL_H
#include <sys/ioctl.h>
#include <sys/types.h>
#include <termios.h>

int openpty(int *amaster, int *aslave, char *name, struct termios *termp, struct winsize *winp);
pid_t forkpty(int *amaster, char *name, struct termios *termp, struct winsize *winp);
int login_tty(int fd);
#endif
