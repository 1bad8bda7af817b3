"""Build options of CPython and the configure arguments and compiler flags they mean."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pyfreight import toolchain
from pyfreight.cpython.versions import CPythonSource, versions_with
from pyfreight.errors import PyfreightError
from pyfreight.platforms import platform_of
from pyfreight.targets import Target

BASE_OPTIONS = ("noopt", "debug", "lto", "pgo", "pgo+lto")
INSTALL_PREFIX = "/install"  # inside the container; scrubbed from the installed tree
# Inside the build container: where a build leaves outputs other than the install tree
# (the exported build folder, the merged PGO profile).
OUTPUT_DIR = "/outputs"
# A cross build's build python: the build machine's CPython artifact of the same version,
# unpacked into the prefix with the dependencies (its members are install/…).
BUILD_PYTHON_PREFIX = f"{toolchain.PREFIX}/install"


@dataclass(frozen=True)
class CodeGen:
    """How the interpreter's own code is compiled and linked: the settings the
    performance matrix of docs/performance.md compares. Dependencies keep the flags of
    pyfreight.toolchain whatever these say."""

    pie: bool  # a position-independent main executable (ASLR for it; relocations at start)
    stack_protector: str  # "strong" (-fstack-protector-strong) or "basic" (-fstack-protector)
    cf_protection: (
        bool  # the target's control-flow protection (x86_64: CET's landing pads and shadow-stack marks)
    )
    full_lto: bool  # full LTO rather than ThinLTO (lto options only)
    static_libc: bool = False  # one fully static executable (targets whose libc allows it)
    frame_pointers: bool = True  # every frame keeps its frame pointer (ELF targets: profilers unwind by it)
    bolt: bool = True  # laid out again by llvm-bolt from a profile of its own (pgo options, where it can be)
    jit: bool = True  # the experimental JIT built in, off until PYTHON_JIT=1 (pgo options, where it can be)


# What every option builds unless a modifier says otherwise (see docs/performance.md for
# the measurements behind these defaults).
DEFAULT_CODEGEN = CodeGen(pie=False, stack_protector="strong", cf_protection=True, full_lto=False)

# Modifiers appended to an option ("pgo+lto+pie"): name -> (CodeGen field, value). A
# modifier names a departure from the default, so every build has one canonical name.
MODIFIERS: dict[str, tuple[str, object]] = {
    "pie": ("pie", True),
    "nopie": ("pie", False),
    "sspstrong": ("stack_protector", "strong"),
    "ssp": ("stack_protector", "basic"),
    "cet": ("cf_protection", True),
    "nocet": ("cf_protection", False),
    "thinlto": ("full_lto", False),
    "fulllto": ("full_lto", True),
    "static": ("static_libc", True),
    "fp": ("frame_pointers", True),
    "nofp": ("frame_pointers", False),
    "bolt": ("bolt", True),
    "nobolt": ("bolt", False),
    "jit": ("jit", True),
    "nojit": ("jit", False),
}


@dataclass(frozen=True)
class BuildOptions:
    """One build option string: [freethreaded+]BASE[+MODIFIER…], e.g. "pgo+lto",
    "freethreaded+debug" or "pgo+lto+pie"."""

    base: str
    freethreaded: bool = False
    modifiers: tuple[str, ...] = ()  # in MODIFIERS order

    @classmethod
    def parse(cls, text: str) -> BuildOptions:
        freethreaded = text.startswith("freethreaded+")
        rest = text.removeprefix("freethreaded+")
        # the longest base that the text is or starts with ("pgo+lto" before "pgo")
        base = next(
            (b for b in sorted(BASE_OPTIONS, key=len, reverse=True) if rest == b or rest.startswith(b + "+")),
            None,
        )
        if base is None:
            choices = ", ".join(BASE_OPTIONS)
            raise PyfreightError(
                f"unknown build option {text!r}: use one of {choices}, optionally prefixed with freethreaded+"
            )
        names = [m for m in rest[len(base) :].split("+") if m]
        modifiers = cls._check_modifiers(text, base, names)
        return cls(base, freethreaded, modifiers)

    @staticmethod
    def _check_modifiers(text: str, base: str, names: list[str]) -> tuple[str, ...]:
        fields: set[str] = set()
        for name in names:
            if name not in MODIFIERS:
                known = ", ".join(MODIFIERS)
                raise PyfreightError(f"build option {text!r}: unknown modifier {name!r} (known: {known})")
            field, value = MODIFIERS[name]
            if field in fields:
                raise PyfreightError(f"build option {text!r}: two modifiers set {field}; keep one")
            fields.add(field)
            if field == "full_lto" and base not in ("lto", "pgo+lto"):
                raise PyfreightError(f"build option {text!r}: {name} needs an lto option (lto or pgo+lto)")
            if field in ("bolt", "jit") and base not in ("pgo", "pgo+lto"):
                raise PyfreightError(f"build option {text!r}: {name} needs a pgo option (pgo or pgo+lto)")
            if getattr(DEFAULT_CODEGEN, field) == value:
                raise PyfreightError(f"build option {text!r}: {name} is already the default; leave it out")
        return tuple(m for m in MODIFIERS if m in names)

    def __str__(self) -> str:
        return "+".join((["freethreaded"] if self.freethreaded else []) + [self.base, *self.modifiers])

    @property
    def pgo(self) -> bool:
        return self.base in ("pgo", "pgo+lto")

    @property
    def lto(self) -> bool:
        return self.base in ("lto", "pgo+lto")

    @property
    def static(self) -> bool:
        """The C library is linked in: one static executable that loads no extension
        module from a shared library (PYTHON.json crt_features `static`)."""
        return self.codegen.static_libc

    @property
    def codegen(self) -> CodeGen:
        changes: dict[str, Any] = {MODIFIERS[m][0]: MODIFIERS[m][1] for m in self.modifiers}
        return replace(DEFAULT_CODEGEN, **changes)


def configure_args(source: CPythonSource, options: BuildOptions, target: Target) -> list[str]:
    """./configure arguments for the pinned CPython `source` built with `options` for
    `target` (cpython/build.sh adds --build for a cross build). What the release can be
    built with is its `features` in cpython/versions.yaml, not a version comparison."""
    if options.freethreaded and "freethreading" not in source.features:
        raise PyfreightError(
            f"CPython {source.version} has no free-threaded build (cpython/versions.yaml features); "
            f"pinned releases that have: {', '.join(versions_with('freethreading'))}"
        )
    args = [
        f"--prefix={INSTALL_PREFIX}",
        # Our expat and mpdecimal (from recipes), not the copies bundled in the source.
        "--with-system-expat",
        "--with-system-libmpdec",
        f"--with-openssl={toolchain.PREFIX}",
        "--with-openssl-rpath=no",
        # libedit (BSD) for the readline module, instead of GPL readline.
        "--with-readline=editline",
        # pip from the wheel bundled in the source; nothing is downloaded.
        "--with-ensurepip=install",
        # The compiler is clang for every target. configure tells it from the whole
        # preprocessed text of a probe, where the glibc floor header's asm lines
        # (toolchain.GLIBC_FLOOR_HEADER) would make it unknown, and PGO silently off.
        "ac_cv_cc_name=clang",
    ]
    # sqlite3's Connection.enable_load_extension, off until a program turns it on, as
    # Debian's and CPython's own Windows builds have it (sqlite-vec, SpatiaLite).
    args.append("--enable-loadable-sqlite-extensions")
    if shares_libpython(options, target):
        # lib/libpython3.X.so beside the interpreter, which cpython/build.sh still links
        # statically from the same objects.
        args.append("--enable-shared")
    if options.base == "debug":
        args.append("--with-pydebug")
    if options.pgo:
        args.append("--enable-optimizations")
    if options.lto:
        args.append("--with-lto=full" if options.codegen.full_lto else "--with-lto=thin")
    if options.freethreaded:
        args.append("--disable-gil")
    if not target.native:
        # Cross-compiled: generated files, compileall and ensurepip run on the build
        # python; configure takes from the target data what it would have to run
        # target programs to find out.
        args += [
            # The name autoconf's config.sub knows the target by: the recipes' CROSS_HOST
            # where the compiler's triple is not one (zig's macOS triples carry a version).
            f"--host={target.recipe_env.get('CROSS_HOST', target.toolchain.clang_triple)}",
            f"--with-build-python={BUILD_PYTHON_PREFIX}/bin/python{source.minor}",
            *(
                f"{name}={value}"
                for name, value in sorted(target.toolchain.cpython_configure_answers.items())
            ),
        ]
    if (
        "tail_call_interpreter" in source.features
        and options.base != "debug"
        and target.toolchain.tail_call_interpreter
    ):
        # clang's musttail: the interpreter's opcode handlers call each other (with the
        # preserve_none convention, which clang has on some architectures only).
        args.append("--with-tail-call-interp")
    if not options.codegen.bolt and not applies_bolt(replace(options, modifiers=()), target):
        raise PyfreightError(
            f"build option {options}: nobolt, but {target.triple}'s {options.base} builds "
            f"{'of the free-threaded CPython ' if options.freethreaded else ''}are not laid out by "
            "llvm-bolt; leave nobolt out"
        )
    if applies_bolt(options, target):
        # After PGO: llvm-bolt instruments the interpreter, runs the same training, and
        # lays it out again from what it saw (CPython's own bolt-opt rule).
        args.append("--enable-bolt")
    if not options.codegen.jit and not carries_jit(source, replace(options, modifiers=()), target):
        build = "free-threaded " if options.freethreaded else ""
        raise PyfreightError(
            f"build option {options}: nojit, but the {build}CPython {source.version} for {target.triple} "
            "has no JIT built in; leave nojit out"
        )
    if carries_jit(source, options, target):
        # Built in, off unless PYTHON_JIT=1: its stencils need their own LLVM
        # (cpython/versions.yaml jit_llvm, in the build image), found by Tools/jit.
        args.append("--enable-experimental-jit=yes-off")
    return args


def shares_libpython(options: BuildOptions, target: Target) -> bool:
    """The install tree carries libpython as a shared library: where the OS's trees do
    (platforms/), unless the C library is linked in (a static executable loads no
    shared library, so one would serve no program of the tree's)."""
    return platform_of(target).shared_libpython and not options.static


def carries_jit(source: CPythonSource, options: BuildOptions, target: Target) -> bool:
    """The experimental JIT is built in (and off) for a pgo build of the GIL where both
    the target and the release can have it, unless +nojit leaves it out: the
    free-threaded build has no JIT yet."""
    return (
        options.pgo
        and options.codegen.jit
        and not options.freethreaded
        and target.builds.experimental_jit
        and source.jit_llvm is not None
    )


def applies_bolt(options: BuildOptions, target: Target) -> bool:
    """llvm-bolt lays the interpreter out again for a pgo build of the GIL where the
    target has BOLT (targets/*.yaml `builds.bolt`), unless +nobolt leaves it out: measured on
    those builds only (docs/performance.md)."""
    return options.pgo and options.codegen.bolt and not options.freethreaded and target.builds.bolt


def recorded_flags(codegen: CodeGen, target: Target) -> tuple[str, str]:
    """CFLAGS and LDFLAGS recorded in sysconfig, so they must make sense on a user's
    machine with gcc or clang: hardening only."""
    platform = platform_of(target)
    cflags = [
        "-fstack-protector-strong" if codegen.stack_protector == "strong" else "-fstack-protector",
        "-D_FORTIFY_SOURCE=2",
        *(["-fstack-clash-protection"] if toolchain.stack_clash_protection(target) else []),
        *(
            [target.toolchain.control_flow_cflags]
            if codegen.cf_protection and target.toolchain.control_flow_cflags
            else []
        ),
    ]
    return " ".join(cflags), platform.hardening_ldflags


# What a macOS link of CPython needs said otherwise than its configure says it for
# Apple's toolchain, as zig's Mach-O linker reads it:
# - shared modules are linked with -shared: zig's driver ignores
#   -bundle, and with -undefined dynamic_lookup alone its linker crashes (zig#25451);
# - -stack_size is read as decimal, while configure means 0x1000000 (16 MiB, which the
#   default recursion limit needs).
MACHO_LINK_ENV = {
    "LDSHARED": "$(CC) -shared -undefined dynamic_lookup",
    # The build's own shared modules (the test-only ones) get an @rpath install name of
    # their file's name, where -shared would record their build path (Modules/…).
    "BLDSHARED": "$(CC) -shared -undefined dynamic_lookup -Wl,-install_name,@rpath/$(@F)",
    "LDCXXSHARED": "$(CXX) -shared -undefined dynamic_lookup",
    "LINKFORSHARED": "-Wl,-stack_size,0x1000000 -framework CoreFoundation",
}


def _macho_env(options: BuildOptions, target: Target, base: dict[str, str]) -> dict[str, str]:
    """CPython's compiler variables for a macOS target: no lld, -z or --exclude-libs
    flags (zig's own Mach-O linker), the link quirks above, and the minimum macOS, which
    configure otherwise asks the build machine's sw_vers for."""
    cflags, ldflags = recorded_flags(options.codegen, target)
    return MACHO_LINK_ENV | {
        "CC": base["CC"],
        "CXX": base["CXX"],
        "CFLAGS": cflags,
        "LDFLAGS": ldflags,
        "CPPFLAGS": f"-I{toolchain.PREFIX}/include",
        # An availability error, not a weak import nobody checks: a call to an API newer
        # than the minimum macOS must be guarded (CPython's own code guards them). zig
        # makes __DATE__ an error; clang takes it from SOURCE_DATE_EPOCH (the source's
        # date), as on Linux, so getbuildinfo.c's build date reproduces. zig's cc turns
        # UBSan on (and links its runtime) in a build that does not optimize, a debug one:
        # a debug interpreter must be CPython's own, as on Linux, not a sanitizer's.
        "CFLAGS_NODIST": (
            f"-ffile-prefix-map={toolchain.WORK_DIR}=. -Werror=unguarded-availability-new -Wno-date-time "
            "-fno-sanitize=undefined"
        ),
        "LDFLAGS_NODIST": f"-L{toolchain.PREFIX}/lib {platform_of(target).build_ldflags}",
        "MACOSX_DEPLOYMENT_TARGET": target.macho.minimum_os_text,
    }


# CPython's own skips (computed gotos), and libffi's functions: instrumented, its
# hand-written calls into C return garbage to ctypes (test_bytes crashed in training).
BOLT_SKIP = "_PyEval_EvalFrameDefault,sre_ucs1_match/1,sre_ucs2_match/1,sre_ucs4_match/1,ffi_.*"
BOLT_COMMON_FLAGS = f"-update-debug-sections -skip-funcs={BOLT_SKIP}"
# How llvm-bolt lays the trained interpreter out: CPython's default BOLT_APPLY_FLAGS
# (configure.ac) with three departures, each after a build it broke (docs/performance.md,
# "BOLT's flags"):
# - no -use-gnu-stack: it turns the PT_GNU_STACK header into the new text segment's, and
#   a program without one gets an executable stack (older kernels) and cannot start a
#   thread under MemoryDenyWriteExecute (glibc asks for executable thread stacks);
# - -frame-opt=none (the default; CPython asks for hot): with it BOLT's allocation
#   combiner merges a leaf function's `sub $N,%rsp` with its `add $N,%rsp` when nothing
#   between names %rsp, which with frame pointers (ours) is every function addressing
#   its locals through %rbp: the frame is gone, the locals lie below the red zone, and a
#   signal frame overwrites them (HACL's SHA-2 segfaulted under a signal timer);
# - -icf=safe: folds only functions whose address is never taken, as a C program that
#   compares function pointers needs (-icf=1 folds them all).
BOLT_APPLY_FLAGS = " ".join(
    (
        BOLT_COMMON_FLAGS,
        "-reorder-blocks=ext-tsp",
        "-reorder-functions=cdsort",
        "-split-functions",
        "-icf=safe",
        "-inline-all",
        "-split-eh",
        "-reorder-functions-use-hot-size",
        "-peepholes=none",
        "-jump-tables=aggressive",
        "-inline-ap",
        "-indirect-call-promotion=all",
        "-dyno-stats",
        "-frame-opt=none",
    )
)


def _bolt_tools() -> dict[str, str]:
    """The build's LLVM's BOLT, which configure would otherwise look for unversioned, and
    our flags for it instead of configure's defaults."""
    tools = toolchain.LLVM_BIN
    return {
        "LLVM_BOLT": f"{tools}/llvm-bolt",
        "MERGE_FDATA": f"{tools}/merge-fdata",
        "BOLT_COMMON_FLAGS": BOLT_COMMON_FLAGS,
        "BOLT_APPLY_FLAGS": BOLT_APPLY_FLAGS,
    }


def _frame_pointer_flags(codegen: CodeGen, target: Target) -> str:
    """Build-only (not recorded in sysconfig, so extensions choose their own)."""
    flags = platform_of(target).frame_pointer_cflags
    return f"{flags} " if flags and codegen.frame_pointers else ""


def compiler_env(options: BuildOptions, target: Target) -> dict[str, str]:
    """Compiler variables for CPython's configure: build-only flags (sysroot, lld,
    our prefix, path mapping) in the *_NODIST variables sysconfig does not pass on."""
    env = toolchain.build_environment(target, jobs=1, source_date_epoch=0)
    if not platform_of(target).gnu_style_linker:
        return _macho_env(options, target, env)
    cflags, ldflags = recorded_flags(options.codegen, target)
    extra: dict[str, str] = {}
    if not target.native:
        # configure links its test programs with LDFLAGS alone, and the build image's
        # GNU ld links only for its own machine (relocate drops the flag from the tree).
        ldflags = f"-fuse-ld=lld {ldflags}"
        # The JIT's stencils include the target's C headers (Tools/jit compiles them
        # with its own clang, which would otherwise find the build machine's).
        extra["CFLAGS_JIT"] = f"--sysroot={toolchain.SYSROOT}"
    # --exclude-libs: nothing of a static library (OpenSSL's assembly routines ignore
    # -fvisibility=hidden) is exported from the interpreter, whose own objects stay
    # exported (-export-dynamic) for extension modules. -no-pie links the executables
    # position-dependent while the objects stay PIE-ready (clang's default -fPIE), so
    # `pyfreight embed --pie` can still link a PIE from the full archive.
    # keep-text-section-prefix: lld keeps the .text.hot/.text.unlikely split that PGO
    # gives functions, so the code start-up and the loop run is contiguous (GNU ld
    # groups them by default; lld merges them into .text in input order otherwise).
    ldflags_nodist = (
        f"-fuse-ld=lld -L{toolchain.PREFIX}/lib -Wl,--exclude-libs,ALL -Wl,-z,keep-text-section-prefix"
    )
    if not options.codegen.pie:
        ldflags_nodist += " -no-pie"
    if target.toolchain.cpython_ldflags:
        ldflags_nodist += f" {target.toolchain.cpython_ldflags}"
    frame_pointers = _frame_pointer_flags(options.codegen, target)
    if applies_bolt(options, target):
        extra |= _bolt_tools()
    if options.static:
        # configure keeps a LINKFORSHARED it is given: the executables' own link flags,
        # instead of -export-dynamic (a static executable has no dynamic symbols).
        extra["LINKFORSHARED"] = "-static"
    return extra | {
        "CC": env["CC"],
        "CXX": env["CXX"],
        "CFLAGS": cflags,
        "LDFLAGS": ldflags,
        "CPPFLAGS": f"-I{toolchain.PREFIX}/include",
        "CFLAGS_NODIST": f"{frame_pointers}-ffile-prefix-map={toolchain.WORK_DIR}=.",
        "LDFLAGS_NODIST": ldflags_nodist,
    }
