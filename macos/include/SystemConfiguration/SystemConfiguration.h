/* pyfreight's declarations of the SystemConfiguration calls and keys CPython's _scproxy
 * module uses: the system's proxy settings. Written from Apple's documented C interface
 * (not copied from its SDK); bound at run time to the real framework by the install name
 * in frameworks/SystemConfiguration.framework/SystemConfiguration.tbd. */
#ifndef PYFREIGHT_SYSTEMCONFIGURATION_H
#define PYFREIGHT_SYSTEMCONFIGURATION_H
#include <CoreFoundation/CoreFoundation.h>

typedef const struct __SCDynamicStore *SCDynamicStoreRef;

CFDictionaryRef SCDynamicStoreCopyProxies(SCDynamicStoreRef store);

extern const CFStringRef kSCPropNetProxiesExceptionsList;
extern const CFStringRef kSCPropNetProxiesExcludeSimpleHostnames;
extern const CFStringRef kSCPropNetProxiesFTPEnable;
extern const CFStringRef kSCPropNetProxiesFTPPort;
extern const CFStringRef kSCPropNetProxiesFTPProxy;
extern const CFStringRef kSCPropNetProxiesGopherEnable;
extern const CFStringRef kSCPropNetProxiesGopherPort;
extern const CFStringRef kSCPropNetProxiesGopherProxy;
extern const CFStringRef kSCPropNetProxiesHTTPEnable;
extern const CFStringRef kSCPropNetProxiesHTTPPort;
extern const CFStringRef kSCPropNetProxiesHTTPProxy;
extern const CFStringRef kSCPropNetProxiesHTTPSEnable;
extern const CFStringRef kSCPropNetProxiesHTTPSPort;
extern const CFStringRef kSCPropNetProxiesHTTPSProxy;
extern const CFStringRef kSCPropNetProxiesSOCKSEnable;
extern const CFStringRef kSCPropNetProxiesSOCKSPort;
extern const CFStringRef kSCPropNetProxiesSOCKSProxy;
#endif
