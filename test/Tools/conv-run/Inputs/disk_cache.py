"""The disk cache of compiled CPU code, driven through conv-run processes.

usage: disk_cache.py WORKDIR

1. A miss compiles and stores one entry; a second process links it (hit),
   compiles nothing, and gives the same output bit for bit (constant weights:
   the cached pack function too); the text report says so.
2. An entry flipped in one byte, cut in half, or another key's entry under
   this key's name is compiled again (a miss, the check passing), never
   linked, and replaced by a whole one (the next run hits).
3. Four processes compiling one new problem at once each pass their check
   and leave one whole entry, no temporary files.
4. The bound: with room for two entries, a third store evicts the least
   recently used one (a hit counts as a use).
5. CONVLOWER_CACHE_DIR=off: nothing stored; --clear-disk-cache empties it.
"""

import glob
import json
import os
import shutil
import subprocess
import sys

work = sys.argv[1]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []

P = "--input-shape 1,16,12,12 --filter-shape 32,16,3,3 --padding 1 --layout nhwc"
Q = "--input-shape 2,8,10,10 --filter-shape 16,8,1,1"
R = "--input-shape 1,8,9,9 --filter-shape 8,8,3,3 --stride 2"


def expect(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def command(problem):
    return (["conv-run"] + problem.split() +
            ["--check", "--reference", "none", "--repeat", "1", "--num-threads", "2",
             "--constant-weights"])


def run(problem, cache, out=None, env=None, text=False):
    e = dict(os.environ, CONVLOWER_CACHE_DIR=cache, **(env or {}))
    cmd = command(problem) + ([] if text else ["--json"])
    if out:
        cmd += ["--output", out]
    p = subprocess.run(cmd, capture_output=True, text=True, env=e)
    if text:
        return p.stdout
    try:
        report = json.loads(p.stdout)
    except ValueError:
        expect(False, f"no report from {' '.join(cmd)}: {p.stderr}")
        return {}
    expect(report.get("check_passed") is True, f"{problem}: check failed {p.stderr}")
    return report


def entries(cache):
    return sorted(glob.glob(os.path.join(cache, "*.clo")))


def others(cache):
    return sorted(f for f in os.listdir(cache) if not f.endswith(".clo")) \
        if os.path.isdir(cache) else []


# 1. Miss, then hit.
c = os.path.join(work, "c")
first = run(P, c, os.path.join(work, "a.npy"))
second = run(P, c, os.path.join(work, "b.npy"))
same = open(os.path.join(work, "a.npy"), "rb").read() == \
    open(os.path.join(work, "b.npy"), "rb").read()
print(f"first: {first.get('disk_cache')}, second: {second.get('disk_cache')}, "
      f"entries {len(entries(c))}, same output {same}")
expect(first.get("disk_cache") == "miss" and second.get("disk_cache") == "hit",
       f"miss then hit: {first.get('disk_cache')}, {second.get('disk_cache')}")
expect(len(entries(c)) == 1 and not others(c), f"one entry: {os.listdir(c)}")
expect(same, "a hit's output differs from the compiled code's")
print("text:", [line for line in run(P, c, text=True).splitlines()
                if line.startswith("compile")][0].split(")", 1)[1].strip())


# 2. Damaged and foreign entries.
def damage(how):
    path = entries(c)[0]
    data = bytearray(open(path, "rb").read())
    if how == "flipped":
        data[len(data) // 2] ^= 0xFF
    elif how == "truncated":
        data = data[: len(data) // 2]
    else:
        q = os.path.join(work, "q")
        run(Q, q)
        data = open(entries(q)[0], "rb").read()
    open(path, "wb").write(data)
    recompiled = run(P, c)
    again = run(P, c)
    print(f"{how}: {recompiled.get('disk_cache')}, then {again.get('disk_cache')}")
    expect(recompiled.get("disk_cache") == "miss" and again.get("disk_cache") == "hit",
           f"{how}: {recompiled.get('disk_cache')}, then {again.get('disk_cache')}")


for how in ("flipped", "truncated", "foreign"):
    damage(how)

# 3. Four writers at once.
par = os.path.join(work, "par")
env = dict(os.environ, CONVLOWER_CACHE_DIR=par)
procs = [subprocess.Popen(command(P) + ["--json"], stdout=subprocess.PIPE, text=True,
                          env=env) for _ in range(4)]
passed = sum(json.loads(p.communicate()[0]).get("check_passed") is True for p in procs)
print(f"concurrent: {passed} of 4 passed, {len(entries(par))} entry, "
      f"{len(others(par))} other files")
expect(passed == 4 and len(entries(par)) == 1 and not others(par),
       f"concurrent: {passed} passed, {os.listdir(par)}")
after = run(P, par).get("disk_cache")
expect(after == "hit", f"after the writers: {after}")

# 4. The bound: room for P and one of Q, R (their sizes measured in a cache
# of their own first).
sizes = {}
for name, problem in (("P", P), ("Q", Q), ("R", R)):
    alone = os.path.join(work, "size-" + name)
    run(problem, alone)
    sizes[name] = os.path.getsize(entries(alone)[0])
b = os.path.join(work, "bound")
run(P, b)
run(Q, b)
bound = {"CONVLOWER_CACHE_BYTES": str(sizes["P"] + max(sizes["Q"], sizes["R"]) + 16)}
expect(run(P, b, env=bound).get("disk_cache") == "hit", "bound: P used")
run(R, b, env=bound)                    # Q is now the least recently used
left = len(entries(b))
p_hit = run(P, b, env={"CONVLOWER_CACHE_BYTES": str(1 << 30)}).get("disk_cache")
q_hit = run(Q, b, env={"CONVLOWER_CACHE_BYTES": str(1 << 30)}).get("disk_cache")
print(f"bound: {left} entries after the third store; P {p_hit}, Q {q_hit}")
expect(left == 2 and p_hit == "hit" and q_hit == "miss",
       f"bound: {left} entries, P {p_hit}, Q {q_hit}")

# 5. Off, and clearing.
off = run(P, "off")
expect(off.get("disk_cache") == "off", f"off: {off.get('disk_cache')}")
cleared = subprocess.run(["conv-run", "--clear-disk-cache"], capture_output=True, text=True,
                         env=dict(os.environ, CONVLOWER_CACHE_DIR=c)).stdout.strip()
print("clear:", cleared.replace(c, "DIR"))
expect(not entries(c), f"clear left {entries(c)}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("disk cache: all checks passed")
