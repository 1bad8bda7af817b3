# The runtime image of a Windows target (targets/*.yaml `run: wine`): Debian's Wine,
# pinned, on the Debian images.yaml names for Wine. Built by `pyfreight images`; BASE is
# that Debian's image tag, PACKAGES the pinned `package=version` list (apt refuses
# another version). ARCHITECTURES: the foreign Debian architectures those packages name
# (`wine32:i386`, Wine's 32-bit side). Their packages come from the suite itself: the
# mirror's -updates and -security indexes of a foreign architecture can lag their signed
# Release, and multiarch needs one version of a library for every architecture.
ARG BASE
FROM ${BASE}
ARG PACKAGES
ARG ARCHITECTURES=""
RUN if [ -n "${ARCHITECTURES}" ]; then sed -i -E '/-(updates|security) /d' /etc/apt/sources.list; fi \
 && for arch in ${ARCHITECTURES}; do dpkg --add-architecture "$arch"; done \
 && apt-get update \
 && apt-get install -y --no-install-recommends ${PACKAGES} \
 && apt-get clean && rm -rf /var/lib/apt/lists/*

# Windows programs run as this unprivileged user (Wine refuses a prefix another user
# owns), headless, without Wine's debug channels, in a prefix made here once so that no
# run spends seconds creating one. `wine64 PROGRAM.exe` runs a program.
RUN useradd --uid 1000 --user-group --home-dir /home/runner --create-home runner \
 && ln -s /usr/lib/wine/wine64 /usr/local/bin/wine64
USER runner
ENV WINEDEBUG=-all WINEPREFIX=/home/runner/.wine
# The prefix says Windows 10, as users' machines do, whatever the pinned Wine's default
# (Wine 8's was Windows 7, which no CPython built here supports).
RUN wine64 wineboot --init && (wineserver64 --wait 2>/dev/null || /usr/lib/wine/wineserver64 --wait) \
 && wine64 reg add 'HKCU\Software\Wine' /v Version /t REG_SZ /d win10 /f \
 && (wineserver64 --wait 2>/dev/null || /usr/lib/wine/wineserver64 --wait)
USER root
