"""The Python package's C API enum values against the C header's.

python/convlower/_capi.py restates include/ConvLower-c/ConvLower.h's enums by
hand (ctypes cannot read a header); this reads both and fails on any
difference: a value changed on one side, a member or an enum added to one
side only, or the API version. Prints one line per enum checked.

usage: check_capi_enums.py --header ConvLower.h --module _capi.py
"""

import argparse
import importlib.util
import re
import sys


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def header_enums(path):
    """{enum name: {member suffix: value}} of every `typedef enum X {...} X;`."""
    text = strip_comments(open(path).read())
    enums = {}
    for name, body in re.findall(r"typedef\s+enum\s+(\w+)\s*\{(.*?)\}\s*\1\s*;", text, re.S):
        members, value = {}, -1
        for entry in filter(None, (e.strip() for e in body.split(","))):
            m = re.fullmatch(r"(\w+)\s*(?:=\s*(-?\d+))?", entry)
            if not m:
                sys.exit(f"{path}: cannot read enum {name}'s member {entry!r}")
            value = int(m.group(2)) if m.group(2) is not None else value + 1
            if not m.group(1).startswith(name):
                sys.exit(f"{path}: {m.group(1)} does not start with its enum's name {name}")
            members[m.group(1)[len(name):]] = value
        enums[name] = members
    return enums


def header_version(path):
    m = re.search(r"#define\s+CONVLOWER_API_VERSION\s+(\d+)", open(path).read())
    return int(m.group(1)) if m else None


def words(camel):
    """CpuTwin -> ["cpu", "twin"]; BF16 -> ["bf16"]; BadInput -> ["bad", "input"]."""
    return [w.lower() for w in re.findall(r"[A-Z]+[0-9]*(?![a-z])|[A-Z][a-z0-9]*", camel)]


# Header enum -> how _capi.py spells it: a dict of names, or module constants.
MIRRORS = {
    "ConvLowerStatus": ("constants", "STATUS_", lambda w: "_".join(w).upper()),
    "ConvLowerLayout": ("dict", "LAYOUTS", lambda w: "".join(w)),
    "ConvLowerDType": ("dict", "DTYPES", lambda w: "".join(w)),
    "ConvLowerTarget": ("dict", "TARGETS", lambda w: "-".join(w)),
    "ConvLowerCpuUnit": ("dict", "CPU_UNITS", lambda w: "-".join(w)),
    "ConvLowerPooling": ("dict", "POOLINGS", lambda w: "-".join(w)),
}


def python_side(module, kind, where):
    if kind == "dict":
        return dict(getattr(module, where))
    return {k[len(where):]: v for k, v in vars(module).items()
            if k.startswith(where) and k[len(where):].isupper()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--header", required=True)
    parser.add_argument("--module", required=True)
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("capi_under_check", args.module)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    errors = []
    enums = header_enums(args.header)
    if not enums:
        errors.append(f"{args.header}: no enums found")
    for name, members in enums.items():
        if name not in MIRRORS:
            errors.append(f"{name}: not mirrored in _capi.py (add it there and to MIRRORS)")
            continue
        kind, where, spell = MIRRORS[name]
        want = {spell(words(suffix)): value for suffix, value in members.items()}
        got = python_side(module, kind, where)
        for key in sorted(want.keys() | got.keys()):
            if key not in got:
                errors.append(f"{name}'s {key!r} = {want[key]}: missing from {where}")
            elif key not in want:
                errors.append(f"{where}'s {key!r} = {got[key]}: no such member of {name}")
            elif got[key] != want[key]:
                errors.append(f"{where}[{key!r}] = {got[key]} but the header's "
                              f"{name} says {want[key]}")
        print(f"{name}: {len(members)} members against {where}")
    if getattr(module, "TARGET_NAMES", None) != {v: k for k, v in module.TARGETS.items()}:
        errors.append("TARGET_NAMES is not TARGETS inverted")
    version = header_version(args.header)
    if module.API_VERSION != version:
        errors.append(f"API_VERSION = {module.API_VERSION} but the header's "
                      f"CONVLOWER_API_VERSION is {version}")
    for e in errors:
        print("error: " + e)
    if errors:
        sys.exit(1)
    print("the C API's enums match")


if __name__ == "__main__":
    main()
