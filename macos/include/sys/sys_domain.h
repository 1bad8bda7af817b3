/* pyfreight's <sys/sys_domain.h>: the system-domain socket protocols macOS's kernel
 * defines, which Modules/socketmodule.c offers as socket.SYSPROTO_CONTROL and PF_SYSTEM
 * sockets (with sys/kern_control.h, which zig's headers have). The values are the
 * kernel's ABI; written from xnu's documented interface, not copied. */
#ifndef PYFREIGHT_SYS_DOMAIN_H
#define PYFREIGHT_SYS_DOMAIN_H
#include <stdint.h>
#include <sys/types.h>

#define SYSPROTO_EVENT 1
#define SYSPROTO_CONTROL 2
#define AF_SYS_CONTROL 2

struct sockaddr_sys {
    u_char ss_len;
    u_char ss_family;
    uint16_t ss_sysaddr;
    uint32_t ss_reserved[7];
};
#endif
