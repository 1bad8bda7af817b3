/* A stand-in for Windows' bcryptprimitives.dll, which Wine 8.0 does not have: Rust's
   standard library imports ProcessPrng from it for random bytes, so uv.exe and every
   Rust-built wheel (cryptography's _rust.pyd) fail to load under Wine without it. This
   one gives ProcessPrng over RtlGenRandom (advapi32's SystemFunction036), which Wine
   implements. For the tests only: it is never shipped, and Windows has its own. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T size) {
    while (size > 0) {
        ULONG chunk = size > 0x10000000 ? 0x10000000 : (ULONG)size;
        if (!SystemFunction036(data, chunk)) {
            return FALSE;
        }
        data += chunk;
        size -= chunk;
    }
    return TRUE;
}
