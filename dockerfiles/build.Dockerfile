# The build image: pinned toolchain on the debootstrapped base, plus the target
# sysroot. Built by `pyfreight images`; BASE is the base image's content-hash tag.
ARG BASE
FROM ${BASE}

COPY build-packages.txt /tmp/build-packages.txt
RUN apt-get update \
 && grep -v '^#' /tmp/build-packages.txt | xargs apt-get install -y --no-install-recommends \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /tmp/build-packages.txt

# LLVM's compiler runtime for a foreign target: its builtins and start and end files
# (what -rtlib=compiler-rt links, the musl targets) and its profile runtime (PGO's
# instrumented interpreter links it). Those files from Debian's package of the target's
# architecture, of the same pinned version as the image's own (COMPILER_RUNTIME is
# package:arch=version; empty: none).
ARG COMPILER_RUNTIME=
RUN if [ -n "$COMPILER_RUNTIME" ]; then \
      arch=${COMPILER_RUNTIME#*:} && arch=${arch%%=*} \
      && dpkg --add-architecture "$arch" && apt-get update \
      && mkdir /tmp/rt && cd /tmp/rt && apt-get download "$COMPILER_RUNTIME" \
      && dpkg-deb -x ./*.deb unpacked \
      && llvm=${COMPILER_RUNTIME#libclang-rt-} && llvm=${llvm%%-dev*} \
      && into=/usr/lib/llvm-$llvm/lib/clang/$llvm/lib/linux && [ -d "$into" ] \
      && for kind in libclang_rt.builtins libclang_rt.profile clang_rt.crtbegin clang_rt.crtend; do \
           runtime=$(find unpacked -name "$kind-*" | grep -v x86_64) \
           && [ "$(echo "$runtime" | wc -l)" = 1 ] && [ -n "$runtime" ] \
           && cp "$runtime" "$into/" || exit 1; \
         done \
      && cd / && rm -rf /tmp/rt /var/lib/apt/lists/* && dpkg --remove-architecture "$arch"; \
    fi

# The target's C library, headers and libraries (targets/*.yaml `sysroot`); compilers
# get --sysroot=/sysroot.
ADD sysroot.tar /sysroot/
# A sysroot loader the image lacks (musl's; glibc's of another architecture) is linked
# where the programs linked against the sysroot ask for it, so that configure's test
# programs and the tools a build makes run here; the image's own loader stays.
RUN for loader in /sysroot/lib/ld-*; do \
      if [ -e "$loader" ] && [ ! -e "/lib/${loader##*/}" ]; then ln -s "$loader" /lib/; fi; \
    done

# Builds run as this unprivileged user; the prefix and work folders are its own.
RUN useradd --uid 1000 --user-group --home-dir /tmp --no-create-home builder \
 && mkdir -p /tools/deps /build/work && chown -R 1000:1000 /tools /build

# A zig sysroot (targets/*.yaml `sysroot: zig`, Windows) compiles its C start-up code,
# compiler runtime, C++ library and import libraries on first use, into its cache: done
# here once, as the builder, so that every build (and every configure that links a C++
# test program) finds them compiled. ZIG_WARM is the compile of warm.c and warm.cc;
# empty for every other target.
ARG ZIG_WARM=
RUN if [ -n "$ZIG_WARM" ]; then \
      install -d -o builder -g builder /sysroot/zig-cache \
      && printf 'int main(void) { return 0; }\n' | tee /tmp/warm.c > /tmp/warm.cc \
      && su builder -s /bin/sh -c "cd /tmp && export ZIG_GLOBAL_CACHE_DIR=/sysroot/zig-cache && $ZIG_WARM" \
      && rm /tmp/warm.*; \
    fi
