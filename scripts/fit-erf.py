#!/usr/bin/env python3
"""The coefficients of cpu::fast_erf (src/ops/cpu_math.h): erf(x) ~ x P(u) / Q(u), u = x^2,
P and Q of degree 5 (Q's constant term 1), on [0, 3.9]. Loeb's method: linear least squares of
x P(u) - erf(x) Q(u) at points clustered at both ends, reweighted by 1 / |Q| until it settles,
which approaches the least-squares fit of the rational function itself. 30-digit arithmetic
(mpmath). Prints the largest |error| on a fine grid at each round, then the coefficients."""
import mpmath as mp

mp.mp.dps = 30
X, NP, NQ, POINTS = mp.mpf("3.9"), 5, 5, 600
xs = [X * (1 - mp.cos(mp.pi * (k + mp.mpf(0.5)) / POINTS)) / 2 for k in range(POINTS)] + [X]
w = [mp.mpf(1)] * len(xs)
for round_ in range(12):
    rows, rhs = [], []
    for x, wi in zip(xs, w):
        u, f = x * x, mp.erf(x)
        rows.append([wi * x * u**i for i in range(NP + 1)] + [-wi * f * u**j for j in range(1, NQ + 1)])
        rhs.append(wi * f)
    sol = mp.qr_solve(mp.matrix(rows), mp.matrix(rhs))[0]
    p = [sol[i] for i in range(NP + 1)]
    q = [mp.mpf(1)] + [sol[NP + 1 + j] for j in range(NQ)]
    poly = lambda c, u: sum(ci * u**i for i, ci in enumerate(c))
    w = [1 / abs(poly(q, x * x)) for x in xs]
    err = max(abs(x * poly(p, x * x) / poly(q, x * x) - mp.erf(x)) for x in (X * k / 4000 for k in range(4001)))
    print(f"round {round_}: largest |error| {mp.nstr(err, 5)}")
print("P =", ", ".join(mp.nstr(c, 17) for c in p))
print("Q =", ", ".join(mp.nstr(c, 17) for c in q))
