/* pyfreight's own <os/log.h>: the part of macOS's unified logging CPython uses
 * (Python/pylifecycle.c, the opt-in system logger). The pinned zig's macOS headers lack
 * it, while libSystem exports the entry points. The calling convention is the one the
 * compiler's os_log builtins exist for: the format string is kept in the image's
 * __TEXT,__oslogstring section, the arguments are packed by __builtin_os_log_format, and
 * both go to _os_log_impl with the image's own __dso_handle. Written from that
 * interface, not copied. */
#ifndef PYFREIGHT_OS_LOG_H
#define PYFREIGHT_OS_LOG_H
#include <stdbool.h>
#include <stdint.h>

typedef struct os_log_s *os_log_t;
typedef uint8_t os_log_type_t;
#define OS_LOG_TYPE_DEFAULT ((os_log_type_t)0x00)
#define OS_LOG_TYPE_INFO ((os_log_type_t)0x01)
#define OS_LOG_TYPE_DEBUG ((os_log_type_t)0x02)
#define OS_LOG_TYPE_ERROR ((os_log_type_t)0x10)
#define OS_LOG_TYPE_FAULT ((os_log_type_t)0x11)

extern struct os_log_s _os_log_default;
#define OS_LOG_DEFAULT (&_os_log_default)
extern void *__dso_handle;

os_log_t os_log_create(const char *subsystem, const char *category);
bool os_log_type_enabled(os_log_t log, os_log_type_t type);
void _os_log_impl(void *dso, os_log_t log, os_log_type_t type, const char *format,
                  uint8_t *buf, uint32_t size);

#define os_log_with_type(log, type, format, ...)                                          \
    __extension__({                                                                       \
        os_log_t _pf_log = (log);                                                         \
        os_log_type_t _pf_type = (type);                                                  \
        if (os_log_type_enabled(_pf_log, _pf_type)) {                                     \
            __attribute__((section("__TEXT,__oslogstring,cstring_literals")))             \
            static const char _pf_format[] = format;                                      \
            uint8_t _pf_buf[__builtin_os_log_format_buffer_size(format, ##__VA_ARGS__)];  \
            __builtin_os_log_format(_pf_buf, format, ##__VA_ARGS__);                      \
            _os_log_impl(&__dso_handle, _pf_log, _pf_type, _pf_format, _pf_buf,           \
                         (uint32_t)sizeof(_pf_buf));                                      \
        }                                                                                 \
    })
#endif
