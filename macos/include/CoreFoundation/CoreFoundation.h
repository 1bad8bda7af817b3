/* pyfreight's declarations of the CoreFoundation calls CPython's _scproxy module makes.
 * The pinned zig has no Apple frameworks; these few types and functions, written from
 * Apple's documented C interface (not copied from its SDK), are enough to compile
 * Modules/_scproxy.c. The calls are bound at run time to the real framework, by the
 * install name in frameworks/CoreFoundation.framework/CoreFoundation.tbd. */
#ifndef PYFREIGHT_COREFOUNDATION_H
#define PYFREIGHT_COREFOUNDATION_H
/* Apple's umbrella header brings in the C library's headers, and _scproxy.c relies on it
 * (strlen, malloc). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned char Boolean;
typedef signed long CFIndex;
typedef const void *CFTypeRef;
typedef const struct __CFAllocator *CFAllocatorRef;
typedef const struct __CFString *CFStringRef;
typedef const struct __CFArray *CFArrayRef;
typedef const struct __CFDictionary *CFDictionaryRef;
typedef const struct __CFNumber *CFNumberRef;
typedef uint32_t CFStringEncoding;
typedef CFIndex CFNumberType;

enum { kCFNumberSInt32Type = 3 };
enum { kCFStringEncodingUTF8 = 0x08000100 };

void CFRelease(CFTypeRef object);
CFIndex CFArrayGetCount(CFArrayRef array);
const void *CFArrayGetValueAtIndex(CFArrayRef array, CFIndex index);
const void *CFDictionaryGetValue(CFDictionaryRef dictionary, const void *key);
Boolean CFNumberGetValue(CFNumberRef number, CFNumberType type, void *value);
CFIndex CFStringGetLength(CFStringRef string);
const char *CFStringGetCStringPtr(CFStringRef string, CFStringEncoding encoding);
Boolean CFStringGetCString(CFStringRef string, char *buffer, CFIndex size,
                           CFStringEncoding encoding);
#endif
