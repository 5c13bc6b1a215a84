#!/usr/bin/env python3
"""The table of cpu::vgelu_table (src/ops/cpu_gelu_table.h, which this script writes to stdout).
gelu(t) = t Phi(t), Phi(t) = (1 + erf(t / sqrt 2)) / 2, through q(a) = Phi(-a) at a = |t|:
Phi(t) = q for t <= 0 and 1 - q for t > 0, so that the small negative gelus keep their relative
precision and the positive ones need only its absolute. q is a cubic in a on each of 31 equal
intervals of [0, 5.5], fitted here by least squares weighted by 1 / q (relative error) at 80
Chebyshev points of each interval; entry 31 is q = 0 (|t| >= 5.5: q < 1.9e-8). Then the table is
evaluated as the vector code does (float32; the entry from min(a, 5.5) 31 / 5.5) every 1e-4 on
[-8, 8] and its errors against gelu in float64 printed into the header."""
import math
import sys
import textwrap

import numpy as np

TOP, PIECES = 5.5, 31
H = TOP / PIECES
erf = np.vectorize(math.erf)


def q_of(a):
    return 0.5 * (1 - erf(a / math.sqrt(2)))


rows = []
for k in range(PIECES):
    a = k * H + H * (np.cos(np.pi * (np.arange(80) + 0.5) / 80) + 1) / 2
    rows.append(np.float32(np.polynomial.polynomial.polyfit(a, q_of(a), 3, w=1 / q_of(a))))
rows.append(np.zeros(4, np.float32))
table = np.array(rows)
inv_h = np.float32(1 / H)

t = (np.arange(-80000, 80001) * 1e-4).astype(np.float32)
ac = np.minimum(np.abs(t), np.float32(TOP))
entry = np.float32(ac * inv_h).astype(int)
q = table[entry, 3]
for j in (2, 1, 0):
    q = np.float32(q * ac + table[entry, j])
got = np.float32(t * np.where(t > 0, np.float32(1) - q, q).astype(np.float32)).astype(np.float64)
ref = t.astype(np.float64) * 0.5 * (1 + erf(t.astype(np.float64) / math.sqrt(2)))
err = np.abs(got - ref)
pos, neg = t > 0, (t < 0) & (np.abs(ref) > 1e-3)
summary = (f"relative error {np.max(err[pos] / ref[pos]):.2g} at t > 0 and {np.max(err[neg] / np.abs(ref[neg])):.2g} "
           f"where t < 0 and |gelu| > 1e-3, absolute {err.max():.2g}")
print(summary, file=sys.stderr)

header = (f"Written by scripts/fit-gelu-table.py: q(a) = Phi(-a) = (1 - erf(a / sqrt 2)) / 2 as a cubic in a on each of "
          f"{PIECES} intervals of [0, {TOP}], entry {PIECES} q = 0. Evaluated in float every 1e-4 on [-8, 8], "
          f"gelu(t) = t (t > 0 ? 1 - q(|t|) : q(|t|)) has {summary}.")
for line in textwrap.wrap(header, 97):
    print("// " + line)
print("#pragma once")
print("namespace kl::cpu {")
print(f"inline constexpr float kGeluTableTop = {TOP}f, kGeluTableInvH = {float(inv_h)!r}f;  // entry = min(|t|, top) / h")
print("alignas(64) inline constexpr float kGeluTable[4][32] = {  // [power of |t|][entry]")
for j in range(4):
    print("    {" + ", ".join(f"{float(c)!r}f" for c in table[:, j]) + "},")
print("};")
print("}  // namespace kl::cpu")
