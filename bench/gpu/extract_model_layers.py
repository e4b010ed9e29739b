#!/usr/bin/python3
"""Writes bench/gpu/models.json: the distinct 2-D convolution problems of three
torchvision networks (ResNet-50, MobileNetV2, ResNeXt-50 32x4d) at 224x224.

Run here with Debian's python3 + torchvision 0.14 (random weights, nothing is
downloaded); the GPU machine only needs the committed models.json and the
bundles that make_convlower_bundles.sh --models writes from it:

  /usr/bin/python3 bench/gpu/extract_model_layers.py [--batch 8] [--out FILE]

One forward pass with a forward pre-hook on every nn.Conv2d records its input
shape; identical problems (input N,C,H,W, filter F,C/G,KH,KW, stride, padding,
dilation, groups) are merged, keeping every layer's name and the count.
"""
import argparse
import json
import os
import sys

import torch
import torchvision

MODELS = {
    "resnet50": torchvision.models.resnet50,
    "mobilenet_v2": torchvision.models.mobilenet_v2,
    "resnext50_32x4d": torchvision.models.resnext50_32x4d,
}


def layers(builder, batch, size):
    model = builder(weights=None).eval()
    seen = []  # (key, name) in forward order
    hooks = []
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Conv2d):
            continue
        if module.padding_mode != "zeros" or isinstance(module.padding, str):
            raise SystemExit(f"{name}: padding {module.padding!r} ({module.padding_mode}) unsupported")

        def hook(mod, inputs, name=name):
            n, c, h, w = inputs[0].shape
            f, cg, kh, kw = mod.weight.shape
            key = (n, c, h, w, f, cg, kh, kw, tuple(mod.stride), tuple(mod.padding),
                   tuple(mod.dilation), mod.groups, mod.bias is not None)
            seen.append((key, name))

        hooks.append(module.register_forward_pre_hook(hook))
    with torch.no_grad():
        model(torch.zeros(batch, 3, size, size))
    for h in hooks:
        h.remove()
    problems = {}
    for key, name in seen:
        problems.setdefault(key, []).append(name)
    out = []
    for i, (key, names) in enumerate(problems.items()):
        n, c, h, w, f, cg, kh, kw, stride, padding, dilation, groups, bias = key
        out.append({
            "id": f"l{i:02d}",
            "input": [n, c, h, w],
            "filter": [f, cg, kh, kw],
            "stride": list(stride),
            "padding": list(padding),
            "dilation": list(dilation),
            "groups": groups,
            "bias": bias,
            "count": len(names),
            "layers": names,
        })
    return out, len(seen)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "models.json"))
    args = ap.parse_args()
    doc = {
        "note": "distinct nn.Conv2d problems of torchvision %s models at %dx%d, batch %d "
                "(extract_model_layers.py); input N,C,H,W and filter F,C/G,KH,KW in torch order; "
                "bias is not part of the benchmarked problem" % (torchvision.__version__, args.size, args.size, args.batch),
        "batch": args.batch,
        "image": args.size,
        "models": {},
    }
    for model, builder in MODELS.items():
        problems, total = layers(builder, args.batch, args.size)
        doc["models"][model] = {"conv_layers": total, "problems": problems}
        print(f"{model}: {total} conv layers, {len(problems)} distinct", file=sys.stderr)
    with open(args.out, "w") as fh:
        # One problem a line: small diffs, easy to read.
        fh.write("{\n")
        fh.write(f'  "note": {json.dumps(doc["note"])},\n')
        fh.write(f'  "batch": {doc["batch"]},\n  "image": {doc["image"]},\n  "models": {{\n')
        models = list(doc["models"].items())
        for mi, (model, m) in enumerate(models):
            fh.write(f'    {json.dumps(model)}: {{"conv_layers": {m["conv_layers"]}, "problems": [\n')
            for pi, p in enumerate(m["problems"]):
                sep = "," if pi + 1 < len(m["problems"]) else ""
                fh.write(f"      {json.dumps(p)}{sep}\n")
            fh.write("    ]}" + ("," if mi + 1 < len(models) else "") + "\n")
        fh.write("  }\n}\n")
    json.load(open(args.out))  # well-formed


if __name__ == "__main__":
    main()
