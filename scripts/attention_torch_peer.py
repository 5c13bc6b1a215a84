#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention beside kernelab's attention ladder, on a GPU.

Times torch.nn.functional.scaled_dot_product_attention with one backend at a time (FlashAttention-2
and cuDNN, chosen with torch.nn.attention.sdpa_kernel), forward and backward, with CUDA events: the
median of --runs runs after --warmup. Prints one JSON line per (backend, op, shape), with
TFLOP/s counted as kernelab counts attention (FlashAttention's count: 4 b h s_q s_kv d forward, the
keys a query sees under the mask, so half at s_q = s_kv causal; backward 2.5x), or "refused" with
the backend's message where it does not take the shape.

The masks are kernelab's: causal is aligned bottom-right (torch's is_causal aligns top-left, so
s_q != s_kv passes torch.nn.attention.bias.causal_lower_right); the tensors are laid out as
kernelab's, [b, s, h, d], and handed over as [b, h, s, d] views. GQA by enable_gqa.

  python3 scripts/attention_torch_peer.py --shape 1,8,8,1024,1024,128,1,bf16 --shape 1,32,8,2048,2048,128,0,fp16

Needs PyTorch 2.5+ with CUDA and a GPU; scripts/install-deps.sh does not install torch. Exits 1 without them.
"""
import argparse
import json
import statistics
import sys
import warnings

FIELDS = ("batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim", "causal", "dtype")


def parse_shape(text):
    parts = text.split(",")
    if len(parts) != len(FIELDS):
        raise argparse.ArgumentTypeError(f"--shape {text}: want {','.join(FIELDS)}, e.g. 1,8,8,1024,1024,128,1,bf16")
    try:
        shape = dict(zip(FIELDS[:6], (int(x) for x in parts[:6])))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shape {text}: the first six fields are whole numbers")
    if min(shape.values()) < 1 or shape["heads"] % shape["kv_heads"]:
        raise argparse.ArgumentTypeError(f"--shape {text}: sizes are positive and heads a multiple of kv_heads")
    if parts[6] not in ("0", "1") or parts[7] not in ("fp16", "bf16"):
        raise argparse.ArgumentTypeError(f"--shape {text}: causal is 0 or 1, dtype fp16 or bf16")
    shape["causal"] = parts[6] == "1"
    shape["dtype"] = parts[7]
    return shape


def forward_flops(s):
    """kernelab's count (attention_sequence_flops): 4 b h s_q avg d, avg the keys a query sees."""
    avg = (max(0, s["seq_kv"] - s["seq_q"]) + s["seq_kv"]) / 2 if s["causal"] else s["seq_kv"]
    return 4.0 * s["batch"] * s["heads"] * s["seq_q"] * avg * s["head_dim"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", type=parse_shape, action="append",
                        help="batch,heads,kv_heads,seq_q,seq_kv,head_dim,causal,dtype (repeatable; "
                             "default: the attention report cases, 1,8,8,1024,1024,128 bf16, causal 0 and 1)")
    parser.add_argument("--backend", choices=("flash", "cudnn"), action="append", help="default: both")
    parser.add_argument("--direction", choices=("fwd", "bwd", "both"), default="both")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    shapes = args.shape or [parse_shape("1,8,8,1024,1024,128,0,bf16"), parse_shape("1,8,8,1024,1024,128,1,bf16")]
    backends = args.backend or ["flash", "cudnn"]
    directions = ["fwd", "bwd"] if args.direction == "both" else [args.direction]

    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.nn.attention.bias import causal_lower_right
    except ImportError as e:
        sys.exit(f"attention_torch_peer: needs PyTorch 2.5 or newer with CUDA ({e})")
    if not torch.cuda.is_available():
        sys.exit(f"attention_torch_peer: no CUDA GPU visible to PyTorch {torch.__version__}")
    kinds = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": getattr(SDPBackend, "CUDNN_ATTENTION", None)}
    device = torch.cuda.get_device_name()

    def median_seconds(fn):
        for _ in range(args.warmup):
            fn()
        times = []
        for _ in range(args.runs):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        return statistics.median(times)

    for s in shapes:
        dtype = torch.bfloat16 if s["dtype"] == "bf16" else torch.float16
        b, h, hkv, sq, sk, d = (s[k] for k in FIELDS[:6])

        def tensor(seq, heads):  # kernelab's [b, s, h, d], as the [b, h, s, d] view SDPA takes
            return torch.randn(b, seq, heads, d, device="cuda", dtype=dtype).transpose(1, 2).requires_grad_()

        q, k, v = tensor(sq, h), tensor(sk, hkv), tensor(sk, hkv)
        mask = causal_lower_right(sq, sk) if s["causal"] and sq != sk else None
        causal = s["causal"] and sq == sk

        def forward():
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, enable_gqa=hkv != h)

        for name in backends:
            for direction in directions:
                op = "attention" if direction == "fwd" else "attention_bwd"  # kernelab's op names
                row = dict(s, op=op, backend=name, device=device, torch=torch.__version__)
                why = []  # the warnings in which torch says why a backend does not take a shape
                try:
                    if kinds[name] is None:
                        raise RuntimeError("this PyTorch has no SDPBackend.CUDNN_ATTENTION")
                    # Grad mode stays on: the forward then also writes the LSE, as kernelab's attention does.
                    with sdpa_kernel([kinds[name]]), warnings.catch_warnings(record=True) as why:
                        warnings.simplefilter("always")
                        if direction == "fwd":
                            seconds = median_seconds(forward)
                        else:
                            out = forward()
                            grad = torch.randn_like(out)
                            seconds = median_seconds(lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True))
                    flops = forward_flops(s) * (2.5 if direction == "bwd" else 1.0)
                    row.update(median_s=seconds, runs=args.runs, flops=flops, tflops=flops / seconds / 1e12)
                except RuntimeError as e:  # the backend does not take the shape
                    reasons = [str(w.message).strip() for w in why] + [str(e).strip() or type(e).__name__]
                    row["refused"] = " | ".join(r.splitlines()[0] for r in reasons if r)
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
