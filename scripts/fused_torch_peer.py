#!/usr/bin/env python3
"""Issue 17's peers on a GPU: the `fused` op's named expressions (src/jit/presets.h) written in
PyTorch as the expressions read, run eagerly (one kernel per op, intermediates in the dtype) and
through torch.compile (Inductor generates Triton), each timed by triton.testing.do_bench (median
of its repeats, milliseconds, inputs resident); torch.compile's first call (Dynamo, Inductor and
Triton's compile) timed as its cold compile. Beside them, kernelab's own points read from
`bench fused --backend cuda --json` files in KERNELAB_DIR (one per expression, NAME.json), and the
copy bandwidth from `probe --gpu --json`. Writes OUT.json and prints one table.

usage: fused_torch_peer.py ROWS COLS DTYPE KERNELAB_DIR PROBE_JSON OUT_JSON
"""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
import triton.testing


def softmax_causal(x):
    rows, cols = x.shape
    keep = torch.arange(cols, device=x.device)[None, :] <= torch.arange(rows, device=x.device)[:, None]
    s = torch.where(keep, x * 0.125, -1e30)
    e = torch.exp(s - s.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def layernorm(x, g, b):
    d = x - x.mean(-1, keepdim=True)
    return d * torch.rsqrt((d * d).mean(-1, keepdim=True) + 1e-5) * g + b


def rmsnorm_residual(x, r, g):
    h = x + r
    return h * torch.rsqrt((h * h).mean(-1, keepdim=True) + 1e-6) * g


def bias_gelu(x, b):
    return F.gelu(x + b)  # the erf form, as the expression's gelu


def swiglu(a, b):
    return F.silu(a) * b


# name -> (function, inputs: "full" a rows x cols tensor, "vec" a row vector of cols)
EXPRESSIONS = {
    "softmax_causal": (softmax_causal, ["full"]),
    "layernorm": (layernorm, ["full", "vec", "vec"]),
    "rmsnorm_residual": (rmsnorm_residual, ["full", "full", "vec"]),
    "bias_gelu": (bias_gelu, ["full", "vec"]),
    "swiglu": (swiglu, ["full", "full"]),
}


def main():
    rows, cols, dtype_name, kernelab_dir, probe_path, out_path = sys.argv[1:7]
    rows, cols = int(rows), int(cols)
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dtype_name]
    copy = json.load(open(probe_path))["gpu"]["copy_bytes_per_s"] if os.path.exists(probe_path) else None
    result = {"rows": rows, "cols": cols, "dtype": dtype_name, "torch": torch.__version__,
              "gpu": torch.cuda.get_device_name(), "copy_bytes_per_s": copy, "expressions": {}}
    print(f"{rows} x {cols} {dtype_name} on {result['gpu']}; medians of do_bench; GB/s of the fused bytes "
          f"(inputs read once, outputs written once){'' if copy is None else f'; copy {copy / 1e9:.0f} GB/s'}")
    print(f"{'expression':<18}{'eager':>10}{'compiled':>10}{'kl unfused':>12}{'kl fused':>10}{'fused GB/s':>12}"
          f"{'% copy':>8}{'fused/compiled':>16}{'compile s':>11}{'nvrtc s':>9}")
    for name, (fn, kinds) in EXPRESSIONS.items():
        torch.manual_seed(1)
        args = [(torch.rand(rows, cols, device="cuda") * 4 - 2 if k == "full" else torch.rand(cols, device="cuda") * 4 - 2).to(dtype)
                for k in kinds]
        nbytes = sum(a.numel() * a.element_size() for a in args) + rows * cols * args[0].element_size()
        eager_ms = triton.testing.do_bench(lambda: fn(*args), return_mode="median")
        compiled = torch.compile(fn)
        t0 = time.perf_counter()
        compiled(*args)
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        compiled_ms = triton.testing.do_bench(lambda: compiled(*args), return_mode="median")
        row = {"eager_ms": eager_ms, "compiled_ms": compiled_ms, "torch_compile_first_call_s": compile_s, "bytes_fused": nbytes}
        kl_file = os.path.join(kernelab_dir, f"{name}.json")
        if os.path.exists(kl_file):
            for p in json.load(open(kl_file))["points"]:
                row[f"kernelab_{p['variant']}_ms"] = p["median_s"] * 1e3
        nvrtc_file = os.path.join(kernelab_dir, f"{name}-nvrtc.json")
        if os.path.exists(nvrtc_file):
            n = json.load(open(nvrtc_file))
            row["nvrtc_compile_s_cold"], row["nvrtc_compile_s_warm"] = n.get("compile_s_cold"), n.get("compile_s_warm")
        result["expressions"][name] = row
        fused_ms = row.get("kernelab_cuda_fused_ms")
        gbs = nbytes / (fused_ms * 1e-3) / 1e9 if fused_ms else None
        cell = lambda v, f: format(v, f) if v is not None else "-"
        print(f"{name:<18}{eager_ms:>10.4f}{compiled_ms:>10.4f}{cell(row.get('kernelab_cuda_unfused_ms'), '>12.4f')}"
              f"{cell(fused_ms, '>10.4f')}{cell(gbs, '>12.0f')}{cell(gbs and copy and 100 * gbs * 1e9 / copy, '>8.1f')}"
              f"{cell(fused_ms and compiled_ms / fused_ms, '>16.2f')}{compile_s:>11.2f}{cell(row.get('nvrtc_compile_s_cold'), '>9.3f')}")
    json.dump(result, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main()
