"""Reading a program's application manifest, the XML Windows reads from the image's
resources (formats/pe.py finds it) when it starts the program, for the facts our rules
judge: the Windows versions it says the program supports (without Windows 10's, Windows
tells the program it runs on Windows 8, and platform.win32_ver() mixes two versions) and
whether it is aware of long paths (without it, every path past 260 characters fails,
even where the system allows them).

Also the manifest embed links into a Windows program, so that one of ours says what
CPython's python.exe says. The XML comes from a file of a tree we did not necessarily
build: it is bounded in size and parsed by defusedxml with no DTD allowed (so no entity
can expand), and any problem is one line (UnreadableManifest)."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass

import defusedxml.ElementTree
from defusedxml import DefusedXmlException

from pyfreight.errors import PyfreightError

MAX_MANIFEST = 64 << 10  # CPython's is 1.7 KiB

ASSEMBLY = "urn:schemas-microsoft-com:asm.v1"
ASSEMBLY_V3 = "urn:schemas-microsoft-com:asm.v3"
COMPATIBILITY = "urn:schemas-microsoft-com:compatibility.v1"
WINDOWS_SETTINGS_2016 = "http://schemas.microsoft.com/SMI/2016/WindowsSettings"

# supportedOS Ids, as Microsoft's documentation of application manifests names them.
SUPPORTED_OS = {
    "{e2011457-1546-43c5-a5fe-008deee3d3f0}": "Windows Vista",
    "{35138b9a-5d96-4fbd-8e2d-a2440225f93a}": "Windows 7",
    "{4a2f28e3-53b9-4441-ba9c-d69d4a4a6e38}": "Windows 8",
    "{1f676c76-80e1-4239-95bb-83d0f6d0da78}": "Windows 8.1",
    "{8e0f7a12-bfb3-4fe8-b9a5-48fd50a15a9a}": "Windows 10 and 11",
}
WINDOWS_10 = "{8e0f7a12-bfb3-4fe8-b9a5-48fd50a15a9a}"

_SUPPORTED_LINES = "".join(f'      <supportedOS Id="{guid}"/>\n' for guid in SUPPORTED_OS)
# The manifest of a program embed links: what CPython's own python.exe declares (every
# Windows version above, long paths, the invoker's rights, version 6 of the common
# controls for the dialogs tkinter and ctypes show).
PROGRAM_MANIFEST = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<assembly xmlns="{ASSEMBLY}" manifestVersion="1.0">
  <trustInfo xmlns="{ASSEMBLY_V3}">
    <security>
      <requestedPrivileges>
        <requestedExecutionLevel level="asInvoker" uiAccess="false"/>
      </requestedPrivileges>
    </security>
  </trustInfo>
  <compatibility xmlns="{COMPATIBILITY}">
    <application>
{_SUPPORTED_LINES}    </application>
  </compatibility>
  <application xmlns="{ASSEMBLY_V3}">
    <windowsSettings>
      <longPathAware xmlns="{WINDOWS_SETTINGS_2016}">true</longPathAware>
    </windowsSettings>
  </application>
  <dependency>
    <dependentAssembly>
      <assemblyIdentity type="win32" name="Microsoft.Windows.Common-Controls" version="6.0.0.0"
        processorArchitecture="*" publicKeyToken="6595b64144ccf1df" language="*"/>
    </dependentAssembly>
  </dependency>
</assembly>
""".encode()


class UnreadableManifest(PyfreightError):
    """A manifest that is no XML we read (said in one line)."""


@dataclass(frozen=True)
class ManifestFacts:
    supported_os: frozenset[str]  # the supportedOS Ids, lower-case
    long_path_aware: bool


def manifest_facts(data: bytes) -> ManifestFacts:
    """The facts of the manifest `data`; UnreadableManifest when it is too large, holds a
    DTD or is no well-formed XML with an <assembly> of its namespace at the top."""
    if len(data) > MAX_MANIFEST:
        raise UnreadableManifest(f"its manifest is {len(data)} bytes, more than {MAX_MANIFEST}")
    try:
        root = defusedxml.ElementTree.fromstring(data, forbid_dtd=True)
    except DefusedXmlException:
        raise UnreadableManifest("its manifest declares a DTD, which no manifest needs") from None
    except ElementTree.ParseError as exc:
        raise UnreadableManifest(f"its manifest is no well-formed XML ({exc})") from None
    if root.tag != f"{{{ASSEMBLY}}}assembly":
        raise UnreadableManifest(
            f"its manifest's top element is {root.tag[:100]!r}, not {ASSEMBLY}'s assembly"
        )
    supported = root.iterfind(f"{{{COMPATIBILITY}}}compatibility/{{{COMPATIBILITY}}}application/"
                              f"{{{COMPATIBILITY}}}supportedOS")  # fmt: skip
    long_paths = root.iterfind(f".//{{{WINDOWS_SETTINGS_2016}}}longPathAware")
    return ManifestFacts(
        supported_os=frozenset(e.get("Id", "").strip().lower() for e in supported),
        long_path_aware=any((e.text or "").strip().lower() == "true" for e in long_paths),
    )
