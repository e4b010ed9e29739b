#!/usr/bin/env python3
"""Writes the PTX of the first gpu.binary object in an MLIR module (conv-opt
--conv-lower-to-nvvm="format=isa" output, on stdin) to stdout, decoding MLIR's string
escapes (\\XX hex, \\\\, \\"), so that ptxas can assemble it."""
import re
import sys

text = sys.stdin.read()
# #gpu.object<#nvvm.target<...>, [properties = {...},] assembly = "PTX">: the
# longest string of the object is its payload.
start = text.find("#gpu.object<")
strings = re.findall(r'"((?:[^"\\]|\\.)*)"', text[start:]) if start >= 0 else []
m = max(strings, key=len) if strings else None
if not m:
    sys.exit("extract_ptx.py: no gpu.object with a string payload on stdin")
raw = m
ptx = re.sub(r'\\([0-9A-Fa-f]{2}|\\|")',
             lambda e: e.group(1) if e.group(1) in ('\\', '"') else chr(int(e.group(1), 16)),
             raw)
sys.stdout.write(ptx)
