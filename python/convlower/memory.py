"""The process's heap, as a whole network's forward needs it.

A forward allocates every activation afresh (ConvLower's outputs, torch's
ops between them) and frees it a layer or two later. glibc's malloc serves
blocks past its mmap threshold (128 KiB, raised dynamically up to 32 MiB)
with fresh mappings, and gives the top of its heap back to the kernel past
its trim threshold, so the next forward touches new pages again: a page
fault each 4 KiB, about 2.7 us each on a VM (measured: MobileNetV2 batch 8,
80,000 faults a torch eager forward, 221 ms, 81 ms without them). Inference
engines keep their buffers in an arena; this does the same for the whole
process: glibc takes every block from its heap (M_MMAP_MAX 0) and keeps up
to `limit` bytes of freed memory at the heap's top (M_TRIM_THRESHOLD).

compile() and patch() call retain_freed_memory() unless told not to. It
changes nothing where

- $CONVLOWER_MALLOC is "system" (the opt-out),
- the user set glibc's own tunables (MALLOC_MMAP_MAX_, MALLOC_TRIM_THRESHOLD_,
  MALLOC_MMAP_THRESHOLD_, MALLOC_TOP_PAD_, or GLIBC_TUNABLES): theirs stand,
- the C library is not glibc.
"""

import ctypes
import os
import threading

DEFAULT_LIMIT = 512 << 20

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4

_USER_TUNABLES = ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_",
                  "MALLOC_TOP_PAD_", "GLIBC_TUNABLES")

_lock = threading.Lock()
_policy = "glibc defaults (not changed by ConvLower)"


def _glibc():
    """The process's glibc, or None (musl, another platform)."""
    try:
        libc = ctypes.CDLL(None)
        version = libc.gnu_get_libc_version
    except (OSError, AttributeError):
        return None
    version.restype = ctypes.c_char_p
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.mallopt.restype = ctypes.c_int
    return libc


def retain_freed_memory(limit=DEFAULT_LIMIT):
    """Makes glibc's malloc keep freed memory for reuse, as an arena would:
    every block from the heap, up to `limit` bytes (default 512 MiB) of free
    heap top kept rather than returned to the kernel. Process-wide and not
    undone (the memory kept is reused by every later allocation). Returns
    whether it was applied; memory_policy() says what holds and why."""
    global _policy
    limit = int(limit)
    if limit < 0 or limit > 2**31 - 1:
        raise ValueError(f"limit {limit}: expected 0 .. 2**31 - 1 bytes")
    with _lock:
        if os.environ.get("CONVLOWER_MALLOC", "") == "system":
            _policy = "glibc defaults ($CONVLOWER_MALLOC=system)"
            return False
        user = [name for name in _USER_TUNABLES if name in os.environ]
        if user:
            _policy = f"the user's malloc tunables ({', '.join(user)})"
            return False
        libc = _glibc()
        if libc is None:
            _policy = "the C library's defaults (not glibc)"
            return False
        if not (libc.mallopt(_M_MMAP_MAX, 0) and libc.mallopt(_M_TRIM_THRESHOLD, limit)):
            _policy = "glibc defaults (mallopt refused the change)"
            return False
        _policy = (f"retained: every block from glibc's heap, up to {limit >> 20} MiB "
                   "of freed memory kept")
        return True


def memory_policy():
    """What governs the process's freed memory, in words."""
    return _policy
