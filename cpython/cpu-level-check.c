/* Refuses to start on a CPU below the x86-64 level this build was compiled for
 * (a target's toolchain.cpu_level_check; build.sh adds this file to CPython's
 * core objects, so the interpreter, libpython and what embed links all carry it).
 *
 * Without it, a v3 build on a v2 CPU dies of SIGILL at the first AVX2 instruction.
 * glibc 2.33's loader would refuse such a program from its ISA-level note, but lld
 * writes no such note next to the CET properties, and glibc below 2.33 never checks.
 *
 * What to check comes from the compiler itself: -march defines a macro for every
 * feature code may use (__AVX2__, __BMI2__, ...). The check's own code is compiled
 * for the baseline (the pragma below), whatever -march says, and runs as the first
 * constructor, before any other code of the build. */
#if defined(__x86_64__) && defined(__SSE3__)
#include <unistd.h>

#pragma clang attribute push(__attribute__((target("arch=x86-64"))), apply_to = function)

struct cpuid_regs {
    unsigned eax, ebx, ecx, edx;
};

static struct cpuid_regs cpuid(unsigned leaf, unsigned subleaf)
{
    struct cpuid_regs r;
    __asm__ volatile("cpuid" : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx) : "a"(leaf), "c"(subleaf));
    return r;
}

/* Which register state the kernel saves (XCR0): AVX code needs the YMM state, AVX-512
 * code also the opmask and ZMM state, or its instructions fault although CPUID lists
 * them. XGETBV itself faults unless CPUID says OSXSAVE. */
static unsigned long long saved_state(unsigned leaf1_ecx)
{
    unsigned lo, hi;
    if (!(leaf1_ecx & 1u << 27))
        return 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}

static size_t append(char *out, size_t used, size_t size, const char *text)
{
    while (*text && used + 1 < size)
        out[used++] = *text++;
    out[used] = '\0';
    return used;
}

struct feature {
    const char *name;
    int present;
};

#if defined(__AVX512F__)
#define LEVEL "x86-64-v4"
#elif defined(__AVX2__)
#define LEVEL "x86-64-v3"
#else
#define LEVEL "x86-64-v2"
#endif

__attribute__((constructor(101))) static void pyfreight_check_cpu_level(void)
{
    struct cpuid_regs max = cpuid(0, 0);
    struct cpuid_regs l1 = cpuid(1, 0);
    struct cpuid_regs l7 = max.eax >= 7 ? cpuid(7, 0) : (struct cpuid_regs){0, 0, 0, 0};
    struct cpuid_regs ext = cpuid(0x80000000u, 0);
    struct cpuid_regs e1 = ext.eax >= 0x80000001u ? cpuid(0x80000001u, 0) : (struct cpuid_regs){0, 0, 0, 0};
    unsigned long long xcr0 = saved_state(l1.ecx);
    int ymm = (xcr0 & 0x6) == 0x6;
    int zmm = (xcr0 & 0xe6) == 0xe6;
    (void)l7, (void)e1, (void)ymm, (void)zmm;
    const struct feature needed[] = {
        {"SSE3", l1.ecx & 1u << 0},
#ifdef __SSSE3__
        {"SSSE3", l1.ecx & 1u << 9},
#endif
#ifdef __SSE4_1__
        {"SSE4.1", l1.ecx & 1u << 19},
#endif
#ifdef __SSE4_2__
        {"SSE4.2", l1.ecx & 1u << 20},
#endif
#ifdef __POPCNT__
        {"POPCNT", l1.ecx & 1u << 23},
#endif
#ifdef __GCC_HAVE_SYNC_COMPARE_AND_SWAP_16
        {"CMPXCHG16B", l1.ecx & 1u << 13},
#endif
#ifdef __LAHF_SAHF__
        {"LAHF/SAHF", e1.ecx & 1u << 0},
#endif
#ifdef __AVX__
        {"AVX", (l1.ecx & 1u << 28) && ymm},
#endif
#ifdef __AVX2__
        {"AVX2", (l7.ebx & 1u << 5) && ymm},
#endif
#ifdef __BMI__
        {"BMI1", l7.ebx & 1u << 3},
#endif
#ifdef __BMI2__
        {"BMI2", l7.ebx & 1u << 8},
#endif
#ifdef __F16C__
        {"F16C", l1.ecx & 1u << 29},
#endif
#ifdef __FMA__
        {"FMA", (l1.ecx & 1u << 12) && ymm},
#endif
#ifdef __LZCNT__
        {"LZCNT", e1.ecx & 1u << 5},
#endif
#ifdef __MOVBE__
        {"MOVBE", l1.ecx & 1u << 22},
#endif
#ifdef __XSAVE__
        {"XSAVE", l1.ecx & 1u << 26},
#endif
#ifdef __AVX512F__
        {"AVX512F", (l7.ebx & 1u << 16) && zmm},
#endif
#ifdef __AVX512BW__
        {"AVX512BW", (l7.ebx & 1u << 30) && zmm},
#endif
#ifdef __AVX512CD__
        {"AVX512CD", (l7.ebx & 1u << 28) && zmm},
#endif
#ifdef __AVX512DQ__
        {"AVX512DQ", (l7.ebx & 1u << 17) && zmm},
#endif
#ifdef __AVX512VL__
        {"AVX512VL", (l7.ebx & 1u << 31) && zmm},
#endif
    };
    char message[512];
    size_t used = append(message, 0, sizeof message, "Python: this build needs an " LEVEL " CPU, and this one lacks");
    size_t missing = 0;
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++) {
        if (needed[i].present)
            continue;
        used = append(message, used, sizeof message, missing++ ? ", " : " ");
        used = append(message, used, sizeof message, needed[i].name);
    }
    if (!missing)
        return;
    used = append(message, used, sizeof message,
                  " (or the system does not enable it). Use a build for a lower level, such as"
                  " the x86_64 one.\n");
    /* Nothing of the build has run yet, so there is nothing to clean up. */
    (void)!write(2, message, used);
    _exit(1);
}

#pragma clang attribute pop
#endif
