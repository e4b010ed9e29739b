#!/usr/bin/env python3
"""conv-run's CUDA route without a GPU: the real kernels through the test libcuda.

For each case, `conv-run --emit-bundle` compiles the kernel for the fake device's
chip (compute capability 9.0: sm_90a, conv-run's default there) and writes the
manifest the launch must follow; then
`conv-run --target cuda --check --json` (and `--target auto`) runs the same
problem with CONVRT_LIBCUDA pointing at runtime/'s test libcuda, which loads the
real cubin (kernel looked up in its ELF symbol table, parameters read from its
.nv.info section), records every module load, launch and copy, and computes
nothing. The script asserts the recorded launch against the manifest: kernel
name, grid, block, dynamic shared memory, parameter count and sizes, each pointer
parameter landing on a buffer of its argument's byte size in manifest order, the
bytes copied each way. The sm_90a TMA + wgmma kernels (the *-tma cases: f16 and
tf32) also take their two tensor maps by value after the pointers, and those
whose producer gathers A (the *-gather cases: NCHW f16 and tf32) the filter's
alone: each must be a 128-byte parameter
holding a map the fake encoded (cuTensorMapEncodeIm2col / Tiled) for the buffer of
the manifest argument it names, with the manifest's mode, dims, byte strides, box,
corners and traversal strides. The *-residual cases fuse a residual into the
epilogue: the manifest lists it before the output, with the output's shape and
dtype, and it is uploaded into its own parameter's buffer like every operand.
The mma.sync cases ask for sm_90 (on sm_90a the
Hopper family takes most of them). The fake leaves the output as the runtime poisoned it
(NaN), so the check must fail honestly: exit 1 and check_passed false in the
JSON. Finally `conv-run --doctor` must call the fake's device usable although
the machine has no /dev/nvidia* nodes (the driver is trusted; the nodes are a
warning).

Any deviation prints what differed and exits 1.
"""

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

# case: (flags, chip, tensor maps in the manifest)
CASES = {
    "f16-nhwc": (["--input-shape", "2,32,10,10", "--filter-shape", "64,32,3,3",
                  "--padding", "1", "--layout", "nhwc", "--dtype", "f16"], "sm_90", 0),
    "f16-nchw": (["--input-shape", "2,16,9,9", "--filter-shape", "32,16,3,3",
                  "--stride", "2", "--padding", "1", "--dtype", "f16"], "sm_90", 0),
    "tf32-nhwc": (["--input-shape", "1,8,12,12", "--filter-shape", "16,8,3,3",
                   "--dilation", "2", "--padding", "2", "--layout", "nhwc"], "sm_90", 0),
    # Four channels per group: 72-byte filter rows, no TMA box; mma.sync on sm_90a.
    "grouped-bf16-bias": (["--input-shape", "2,16,8,8", "--filter-shape", "32,4,3,3",
                           "--groups", "4", "--padding", "1", "--layout", "nhwc",
                           "--dtype", "bf16", "--bias"], "sm_90a", 0),
    "f16-nhwc-tma": (["--input-shape", "2,64,9,11", "--filter-shape", "96,64,3,3",
                      "--stride", "1,2", "--padding", "1", "--layout", "nhwc",
                      "--dtype", "f16", "--bias"], "sm_90a", 2),
    "tf32-nhwc-tma": (["--input-shape", "1,32,10,10", "--filter-shape", "64,32,3,3",
                       "--padding", "1", "--layout", "nhwc"], "sm_90a", 2),
    "f16-nchw-gather": (["--input-shape", "2,64,9,11", "--filter-shape", "96,64,3,3",
                         "--stride", "1,2", "--padding", "1", "--dtype", "f16", "--bias"],
                        "sm_90a", 1),
    "tf32-nchw-gather": (["--input-shape", "1,32,10,10", "--filter-shape", "64,32,3,3",
                          "--padding", "1"], "sm_90a", 1),
    "i8-quantized-nhwc": (["--input-shape", "2,32,9,9", "--filter-shape", "64,32,3,3",
                           "--padding", "1", "--layout", "nhwc", "--dtype", "i8",
                           "--zero-points", "5,-3"], "sm_90a", 0),
    # The residual (a ResNet block's skip connection) fused into the epilogue:
    # one more pointer, after the bias, to an upload of the output's bytes.
    "f16-nhwc-tma-residual": (["--input-shape", "2,64,9,11", "--filter-shape",
                               "96,64,3,3", "--padding", "1", "--layout", "nhwc",
                               "--dtype", "f16", "--bias", "--residual"], "sm_90a", 2),
    "tf32-nchw-residual": (["--input-shape", "2,16,9,9", "--filter-shape", "32,16,3,3",
                            "--padding", "1", "--residual"], "sm_90", 0),
}
WARMUP, REPEAT = 1, 2
DTYPE_BYTES = {"f32": 4, "tf32": 4, "f16": 2, "bf16": 2, "i8": 1, "i32": 4}
# The fake device is compute capability 9.0: sm_90a is conv-run's default there.

failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)
    return condition


def run(args, env=None):
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)


def read_record(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def nbytes(argument):
    return math.prod(argument["shape"]) * DTYPE_BYTES[argument["dtype"]]


def check_launches(case, manifest, cubin_size, events):
    kernel, arguments = manifest["kernel"], manifest["arguments"]
    loads = [e for e in events if e.get("event") == "module_load"]
    expect(any(e.get("kind") == "cubin" and e.get("bytes") == cubin_size for e in loads),
           f"{case}: no cubin of {cubin_size} bytes was loaded (loads: {loads})")
    launches = [e for e in events if e.get("event") == "launch"]
    expect(len(launches) == WARMUP + REPEAT,
           f"{case}: {len(launches)} launches, expected warm-up + repeat = {WARMUP + REPEAT}")
    for i, launch in enumerate(launches):
        where = f"{case}: launch {i}"
        expect(launch.get("kernel") == kernel["name"],
               f"{where}: kernel {launch.get('kernel')!r}, manifest {kernel['name']!r}")
        expect(launch.get("grid") == kernel["grid"],
               f"{where}: grid {launch.get('grid')}, manifest {kernel['grid']}")
        expect(launch.get("block") == kernel["block"],
               f"{where}: block {launch.get('block')}, manifest {kernel['block']}")
        expect(launch.get("shared_memory_bytes") == kernel.get("shared_memory_bytes", 0),
               f"{where}: dynamic shared memory {launch.get('shared_memory_bytes')}, "
               f"manifest {kernel.get('shared_memory_bytes', 0)}")
        params = launch.get("params", [])
        maps = manifest.get("tensor_maps", [])
        expect(len(params) == len(arguments) + len(maps),
               f"{where}: {len(params)} parameters, manifest lists {len(arguments)} "
               f"arguments and {len(maps)} tensor maps")
        check_tensor_maps(where, arguments, maps, params)
        for param, argument in zip(params, arguments):
            name = argument["name"]
            expect(param.get("size") == 8,
                   f"{where}: parameter {name} is {param.get('size')} bytes, a pointer is 8")
            allocation = param.get("allocation")
            expect(allocation is not None and allocation.get("offset") == 0 and
                   allocation.get("bytes") == nbytes(argument),
                   f"{where}: parameter {name} points at {allocation}, expected the start "
                   f"of a {nbytes(argument)}-byte buffer ({argument['shape']} "
                   f"{argument['dtype']})")
    # The runtime uploads the operands in manifest order; each upload must land in
    # the buffer the launch passes for that operand (equal sizes cannot hide a
    # swap), and the download must come from the output parameter's buffer.
    copies = [e for e in events if e.get("event") == "memcpy"]
    uploads = [e for e in copies if e.get("direction") == "htod"]
    downloads = [e for e in copies if e.get("direction") == "dtoh"]
    params = launches[0].get("params", []) if launches else []
    buffer_of = {a["name"]: (p.get("allocation") or {}).get("id")
                 for p, a in zip(params, arguments)}
    operands = [a for a in arguments if a["role"] != "output"]
    expect([(e.get("allocation") or {}).get("id") for e in uploads] ==
           [buffer_of.get(a["name"]) for a in operands] and
           [e["bytes"] for e in uploads] == [nbytes(a) for a in operands],
           f"{case}: uploads {[(e.get('allocation'), e['bytes']) for e in uploads]} do not "
           f"fill the launch's operand buffers {buffer_of} in manifest order")
    outputs = [a for a in arguments if a["role"] == "output"]
    expect([(e.get("allocation") or {}).get("id") for e in downloads] ==
           [buffer_of.get(a["name"]) for a in outputs] and
           [e["bytes"] for e in downloads] == [nbytes(a) for a in outputs],
           f"{case}: downloads {[(e.get('allocation'), e['bytes']) for e in downloads]}, "
           f"expected the output parameter's buffer {[nbytes(a) for a in outputs]} bytes")


def check_tensor_maps(where, arguments, maps, params):
    """The by-value maps after the pointers: encoded for the right buffers."""
    buffer_of = {a["name"]: (p.get("allocation") or {}).get("id")
                 for p, a in zip(params, arguments)}
    for spec, param in zip(maps, params[len(arguments):]):
        name = spec["name"]
        got = param.get("tensor_map")
        if not expect(param.get("size") == 128 and got is not None,
                      f"{where}: tensor map {name}: parameter of {param.get('size')} bytes "
                      f"holding {got}, expected a 128-byte map the fake encoded"):
            continue
        expect((got.get("allocation") or {}).get("id") == buffer_of.get(spec["argument"]) and
               (got.get("allocation") or {}).get("offset") == 0,
               f"{where}: tensor map {name} describes {got.get('allocation')}, expected "
               f"the start of the {spec['argument']} buffer")
        box = ([got.get("channels_per_pixel"), got.get("pixels_per_column")]
               if spec["mode"] == "im2col" else got.get("box"))
        fields = [("mode", got.get("mode"), spec["mode"]),
                  ("dims", got.get("dims"), spec["dims"]),
                  ("strides", got.get("strides"), spec["strides_bytes"]),
                  ("box", box, spec["box"]),
                  ("element_strides", got.get("element_strides"), spec["element_strides"]),
                  ("swizzle", got.get("swizzle"), spec["swizzle"])]
        if spec["mode"] == "im2col":
            fields += [("lower_corner", got.get("lower_corner"), spec["lower_corner"]),
                       ("upper_corner", got.get("upper_corner"), spec["upper_corner"])]
        for field, value, want in fields:
            expect(value == want, f"{where}: tensor map {name}: {field} {value}, manifest "
                                  f"{want}")


def run_case(args, case, flags, chip, map_count, tmp):
    bundle = tmp / case
    flags = flags + ([] if chip == "sm_90a" else ["--chip", chip])
    emitted = run([args.conv_run, *flags, "--emit-bundle", str(bundle), "--chip", chip,
                   "--json"])
    if not expect(emitted.returncode == 0,
                  f"{case}: --emit-bundle failed ({emitted.returncode}): {emitted.stderr}"):
        return
    summary = json.loads(emitted.stdout)
    manifest = json.loads((bundle / "manifest.json").read_text())
    expect(summary.get("kernel") == manifest["kernel"]["name"] and
           summary.get("grid") == manifest["kernel"]["grid"] and
           summary.get("chip") == chip,
           f"{case}: --emit-bundle --json {summary} disagrees with manifest.json")
    roles = [a["role"] for a in manifest["arguments"]]
    residual = "--residual" in flags
    expect(roles[-2:] == (["residual", "output"] if residual else roles[-2:]) and
           ("residual" in roles) == residual,
           f"{case}: argument roles {roles}")
    if residual:
        r, y = manifest["arguments"][-2:]
        expect(r["shape"] == y["shape"] and r["dtype"] == y["dtype"],
               f"{case}: residual {r}, output {y}")
    cubin_size = (bundle / manifest["kernel"]["binary"]).stat().st_size
    expect(len(manifest.get("tensor_maps", [])) == map_count,
           f"{case}: {len(manifest.get('tensor_maps', []))} tensor maps in the manifest, "
           f"expected {map_count}")

    for target in ["cuda", "auto"]:
        record = tmp / f"{case}-{target}.jsonl"
        record.unlink(missing_ok=True)  # the fake appends
        env = dict(os.environ, CONVRT_LIBCUDA=args.fake_libcuda, FAKE_CUDA_RECORD=str(record))
        ran = run([args.conv_run, *flags, "--target", target, "--check", "--json",
                   "--warmup", str(WARMUP), "--repeat", str(REPEAT)], env)
        where = f"{case} --target {target}"
        expect(ran.returncode == 1,
               f"{where}: exit {ran.returncode}, expected 1 (the fake computes nothing, "
               f"the check must fail); stderr: {ran.stderr.strip()}")
        try:
            report = json.loads(ran.stdout)
        except json.JSONDecodeError:
            expect(False, f"{where}: no JSON report: {ran.stdout!r} {ran.stderr!r}")
            continue
        expect(report.get("target") == "cuda", f"{where}: ran on {report.get('target')!r}")
        expect(report.get("chip") == chip, f"{where}: chip {report.get('chip')!r}")
        expect(report.get("check_passed") is False,
               f"{where}: check_passed {report.get('check_passed')}, expected false")
        expect(report.get("total_outputs") == nbytes(manifest["arguments"][-1]) // 4,
               f"{where}: total_outputs {report.get('total_outputs')}")
        expect(report.get("im2col") == "implicit" and report.get("inflation") == 1,
               f"{where}: im2col {report.get('im2col')!r}, inflation {report.get('inflation')}")
        check_launches(where, manifest, cubin_size, read_record(record))


def check_doctor(args):
    env = dict(os.environ, CONVRT_LIBCUDA=args.fake_libcuda)
    doctor = run([args.conv_run, "--doctor", "--json"], env)
    expect(doctor.returncode == 0,
           f"--doctor through the fake driver: exit {doctor.returncode}, expected 0 "
           f"(the driver finds a device); {doctor.stdout[-400:]} {doctor.stderr}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conv-run", required=True)
    parser.add_argument("--fake-libcuda", required=True)
    parser.add_argument("--tmp", required=True)
    args = parser.parse_args()
    if not Path(args.fake_libcuda).exists():
        print(f"the test libcuda {args.fake_libcuda} was not built", file=sys.stderr)
        return 1
    tmp = Path(args.tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    for case, (flags, chip, map_count) in CASES.items():
        run_case(args, case, flags, chip, map_count, tmp)
    check_doctor(args)
    for failure in failures:
        print("FAIL:", failure)
    print(f"{len(CASES)} cases through the CUDA route on the test libcuda: "
          f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
