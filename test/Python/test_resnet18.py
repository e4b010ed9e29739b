"""A real network end to end: torchvision's ResNet-18 (random weights, nothing
downloaded) at 64x64, batch 2, with every convolution through ConvLower
(convlower.patch, the CPU JIT): the logits match the unpatched model's within
1e-4 of their largest magnitude, and each of its 20 conv layers ran through
ConvLower (none left to torch).
"""

import os
import sys
import time

import torch
import torchvision

import convlower

seed = int.from_bytes(os.urandom(4), "little")
print(f"seed {seed}")
torch.manual_seed(seed)
model = torchvision.models.resnet18(weights=None).eval()
x = torch.rand(2, 3, 64, 64)
with torch.inference_mode():
    want = model(x)
start = time.perf_counter()
with convlower.patch(model, target="cpu") as patch, torch.inference_mode():
    got = model(x)
    layers = list(patch.layers)
    print(patch.summary())
seconds = time.perf_counter() - start
error = float((got - want).abs().max() / want.abs().max())
convs = [r for r in layers if r.calls == 1 and r.fallbacks == 0]
print(f"resnet18: {len(convs)} of {len(layers)} conv layers through ConvLower, "
      f"logits error {error:.2e}, first forward (compiling) {seconds:.1f} s")
ok = len(layers) == 20 and len(convs) == 20 and error <= 1e-4 and got.shape == (2, 1000)
print("resnet18 end to end:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
