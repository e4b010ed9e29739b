#!/usr/bin/env python3
"""The house's rooms and who may include whom.

Reads every C++ source and header under lib/, include/ConvLower/ and
runtime/, maps each `#include "..."` of the project's own files to the room
(folder) that holds it, and fails when
  - a room includes a room it is not allowed to (the table below), or
  - the rooms' include graph has a cycle (a file includes a header of a
    folder that depends on its own).
  - a GPU kernel family or the core (lib/Transforms/GPU/{Core,Sm80,Sm90,
    Depthwise}) branches on a twin flag: the families ask their hardware
    interface (Sm80Hardware, Sm90Hardware) and only Transforms/GPU/Twin
    emulates it, so code there names no `twin` value.
Prints the graph it checked, so a FileCheck can see the rooms exist.

usage: check_layering.py SOURCE_ROOT
"""

import os
import re
import sys

# Room -> the rooms it may include (itself always). A room is a folder; a
# file belongs to the deepest room that holds it. Public headers under
# include/ConvLower/X belong to the room of lib/X, but for the GPU room's
# (Transforms/GPU/API), which its core includes.
ALLOWED = {
    "Dialect": {"Shared"},
    "Shared": set(),  # include/ConvLower/Transforms/*.{h,td}: option parsers
    "Transforms/Common": {"Dialect", "Shared"},
    "Transforms/CPU": {"Transforms/Common", "Dialect", "Shared"},
    # include/ConvLower/Transforms/GPU: the GPU room's public interface
    # (options, the rewrite's C++ API, the passes), what other rooms see.
    "Transforms/GPU/API": {"Dialect", "Shared", "runtime"},
    # The GPU room's folders, the core below the families (no folder includes
    # one that depends on it).
    "Transforms/GPU/Core": {"Transforms/GPU/API", "Transforms/Common",
                            "Dialect", "Shared", "runtime"},
    "Transforms/GPU/Sm80": {"Transforms/GPU/Core", "Transforms/GPU/API",
                            "Transforms/Common", "Dialect", "Shared",
                            "runtime"},
    "Transforms/GPU/Depthwise": {"Transforms/GPU/Sm80", "Transforms/GPU/Core",
                                 "Transforms/GPU/API", "Transforms/Common",
                                 "Dialect", "Shared", "runtime"},
    "Transforms/GPU/Sm90": {"Transforms/GPU/Sm80", "Transforms/GPU/Core",
                            "Transforms/GPU/API", "Transforms/Common",
                            "Dialect", "Shared", "runtime"},
    # The twin: the families' bodies on the CPU, their hardware emulated.
    # Above the families (it implements their hardware interfaces); no
    # family includes it.
    "Transforms/GPU/Twin": {"Transforms/GPU/Sm90", "Transforms/GPU/Sm80",
                            "Transforms/GPU/Depthwise", "Transforms/GPU/Core",
                            "Transforms/GPU/API", "Transforms/Common",
                            "Dialect", "Shared", "runtime"},
    # The passes and the rewrite driver, the one place that picks a family.
    "Transforms/GPU": {"Transforms/GPU/Twin", "Transforms/GPU/Sm90",
                       "Transforms/GPU/Sm80", "Transforms/GPU/Depthwise",
                       "Transforms/GPU/Core",
                       "Transforms/GPU/API", "Transforms/Common", "Dialect",
                       "Shared", "runtime"},
    # include/ConvLower/Transforms/Passes.h: every room's passes, for drivers.
    "Transforms/All": {"Transforms/Common", "Transforms/CPU",
                       "Transforms/GPU", "Transforms/GPU/API"},
    "TransformOps": {"Transforms/All", "Transforms/Common", "Transforms/GPU",
                     "Transforms/GPU/API", "Dialect", "Shared", "runtime"},
    "Pipelines": {"Transforms/All", "Transforms/Common", "Transforms/CPU",
                  "Transforms/GPU", "Transforms/GPU/API", "Dialect", "Shared",
                  "runtime"},
    "Runner": {"Pipelines", "Transforms/All", "Transforms/Common",
               "Transforms/CPU", "Transforms/GPU", "Transforms/GPU/API",
               "Dialect", "Shared", "runtime"},
    "CAPI": {"Runner", "Pipelines", "Transforms/GPU", "Transforms/GPU/API",
             "Dialect", "Shared", "runtime", "CAPI-header"},
    "CAPI-header": set(),
    "runtime": set(),
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# The rooms that build a kernel once for any hardware, and what in their code
# would be a branch on which hardware it is.
HARDWARE_NEUTRAL = ("Transforms/GPU/Core", "Transforms/GPU/Sm80",
                    "Transforms/GPU/Sm90", "Transforms/GPU/Depthwise")
TWIN_FLAG = re.compile(r"\b(twin|isTwin|onTwin|forTwin)\b")


def code_of(text):
    """The text without // comments and string literals."""
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    return re.sub(r"//[^\n]*", "", text)


def room_of_path(rel):
    """The room of a file given by its path from the source root."""
    parts = rel.split(os.sep)
    if parts[0] == "runtime":
        return "runtime"
    if parts[:2] == ["include", "ConvLower-c"]:
        return "CAPI-header"
    if parts[:4] == ["include", "ConvLower", "Transforms", "GPU"]:
        return "Transforms/GPU/API"
    if parts[0] == "include" and parts[1] == "ConvLower":
        parts = ["lib"] + parts[2:]
    if parts[0] != "lib" or len(parts) < 3:
        return None
    if parts[1] == "Transforms":
        if parts[2] in ("Passes.h", "Passes.h.inc"):
            return "Transforms/All"
        if len(parts) == 3:
            return "Shared"
        # lib/Transforms/GPU/<Sub>/...: the GPU room's folders are rooms.
        if parts[2] == "GPU" and len(parts) > 4:
            return "Transforms/GPU/" + parts[3]
        return "Transforms/" + parts[2]
    return parts[1]


def room_of_include(name, including_dir, root):
    """The room of an included file, or None when it is not ours."""
    candidates = [
        os.path.join(including_dir, name),
        os.path.join(root, "lib", name),
        os.path.join(root, "include", name),
        os.path.join(root, "runtime", "include", name),
    ]
    for c in candidates:
        if os.path.isfile(c):
            return room_of_path(os.path.relpath(c, root))
    # Generated files (Passes.h.inc, ...) belong to the header's room.
    if name.startswith("ConvLower/"):
        return room_of_path(os.path.join("include", name))
    if name.startswith("ConvLower-c/"):
        return "CAPI-header"
    return None


def main():
    root = os.path.abspath(sys.argv[1])
    edges = {}
    errors = []
    for top in ["lib", os.path.join("include", "ConvLower"),
                os.path.join("include", "ConvLower-c"), "runtime"]:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not f.endswith((".h", ".cpp", ".c")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                src = room_of_path(rel)
                if src is None:
                    continue
                text = open(path, encoding="utf-8").read()
                if src == "runtime" and re.search(r'#\s*include\s+["<]mlir/',
                                                  text):
                    errors.append(f"{rel}: runtime/ includes MLIR")
                if src in HARDWARE_NEUTRAL:
                    for number, line in enumerate(code_of(text).splitlines()):
                        if TWIN_FLAG.search(line):
                            errors.append(f"{rel}:{number + 1}: {src} branches "
                                          f"on a twin flag (ask the hardware "
                                          f"interface): {line.strip()}")
                for name in INCLUDE.findall(text):
                    dst = room_of_include(name, dirpath, root)
                    if dst is None or dst == src:
                        continue
                    edges.setdefault(src, {}).setdefault(dst, rel)
                    if src not in ALLOWED:
                        errors.append(f"{rel}: room {src} is not in the table")
                    elif dst not in ALLOWED[src]:
                        errors.append(f"{rel}: {src} includes {dst} "
                                      f"(\"{name}\"), which it may not")
    # A cycle among rooms, by depth-first search.
    state = {}

    def visit(n, stack):
        state[n] = 1
        for m in edges.get(n, {}):
            if state.get(m) == 1:
                cycle = stack[stack.index(m):] + [m]
                errors.append("cycle: " + " -> ".join(cycle))
            elif m not in state:
                visit(m, stack + [m])
        state[n] = 2

    for n in sorted(edges):
        if n not in state:
            visit(n, [n])
    for src in sorted(edges):
        print(f"{src} -> {', '.join(sorted(edges[src]))}")
    for e in errors:
        print("error: " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
