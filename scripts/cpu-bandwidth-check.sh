#!/usr/bin/env bash
# The CPU ladders on this CPU, at every x86 level it runs (KERNELAB_CPU_ISA: generic, avx2,
# avx512; LEVELS="avx2" to pick, LEVELS=best for the CPU's best alone): for each level, measures
# the ceilings (probe), then every CPU rung of the memory-bound ops on a working set past every
# cache (16384 x 8192: 512 MiB of fp32 in, as much out) in fp32, bf16 and fp16 (DTYPES to pick;
# RUNGS=best for each op's best rung alone), and fp32 gemm's tiled rung beside OpenBLAS at 1024^3
# and 4096^3 (GEMM_SIZES; at the generic and avx2 levels against OpenBLAS's kernels of that width,
# OPENBLAS_CORETYPE Core2 and Haswell unless set), and writes one results file per machine kind and
# level, $OUT_ROOT/<cpu>/<date>-<commit>-<level>.json (OUT_ROOT: bench/results/cpu; the commit: git's, or
# KERNELAB_COMMIT where there is no git), with the probe (CPU model, the level and its
# extensions, the CPU's best level, huge pages, triad) and every point. Run it on a quiet machine:
# the probe and the points share the memory bus with everything else. On a VM whose neighbours
# move the triad by half within minutes, one probe per run is no bound for a point ten minutes
# later: the triad is probed again before each op's points and after the last (3 s each), each
# point carries the two that bracket it, and the summary gives its share of their mean and the spread.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${KERNELAB:-build/kernelab}
[ -x "$bin" ] || make build
commit=${KERNELAB_COMMIT:-$(git describe --always --dirty --abbrev=12)}
dtypes=${DTYPES:-fp32 bf16 fp16}
gemm_sizes=${GEMM_SIZES:-1024 4096}
out_root=${OUT_ROOT:-bench/results/cpu}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
best=$("$bin" probe --json | python3 -c "import json, sys; print(json.load(sys.stdin)['isa_cpu'])")
[ "${LEVELS:-}" = best ] && LEVELS=$best
if [ -z "${LEVELS:-}" ]; then
  case $best in avx512) LEVELS="avx512 avx2 generic" ;; avx2) LEVELS="avx2 generic" ;; *) LEVELS="generic" ;; esac
fi
ops="softmax layernorm rmsnorm transpose reduce bias_gelu"
best_rung() { case $1 in transpose) echo cpu_tiled ;; reduce) echo cpu_simd ;; *) echo cpu_fused ;; esac; }
for level in $LEVELS; do
  export KERNELAB_CPU_ISA=$level
  mkdir -p "$tmp/$level"
  runs=0
  for dtype in $dtypes; do
    for op in $ops; do
      rung=(); [ "${RUNGS:-all}" = best ] && rung=(--variant "$(best_rung "$op")")
      # bench's own share of bound is against the stored probe: this one, seconds old
      "$bin" probe --json > "$tmp/$level/triad-$runs.json"
      "$bin" bench "$op" --rows 16384 --cols 8192 --dtype "$dtype" --backend cpu ${rung[@]+"${rung[@]}"} --max-seconds 0.5 --json > "$tmp/$level/$op-$dtype.json"
      runs=$((runs + 1))
    done
  done
  "$bin" probe --json > "$tmp/$level/triad-$runs.json"
  # A level's gemm peer is OpenBLAS's kernels of the same width (unless OPENBLAS_CORETYPE says):
  # Core2's SSE ones for generic, Haswell's AVX2 ones for avx2, not the AVX-512 ones it picks for
  # this CPU, which a CPU that runs our lower level does not have.
  blas_core=${OPENBLAS_CORETYPE:-}
  [ "$level" = generic ] && blas_core=${OPENBLAS_CORETYPE:-Core2}
  [ "$level" = avx2 ] && blas_core=${OPENBLAS_CORETYPE:-Haswell}
  OPENBLAS_CORETYPE=$blas_core "$bin" list --json > "$tmp/$level/list.json"
  for n in $gemm_sizes; do
    OPENBLAS_CORETYPE=$blas_core "$bin" bench gemm --m $n --n $n --k $n --dtype fp32 --backend cpu --variant cpu_tiled openblas --max-seconds 2 --json > "$tmp/$level/gemm-$n.json"
  done
done
python3 - "$tmp" "$commit" "$ops" "$dtypes" "$gemm_sizes" "$out_root" $LEVELS <<'PY'
import json, os, re, sys, time
tmp, commit, ops, dtypes, sizes, out_root = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split(), sys.argv[5].split(), sys.argv[6]
levels = sys.argv[7:]
for level in levels:
    count = sum(f.startswith("triad-") for f in os.listdir(f"{tmp}/{level}"))
    probes = [json.load(open(f"{tmp}/{level}/triad-{k}.json")) for k in range(count)]
    probe = probes[0]  # the run's first, as the file's probe
    triads = [q["triad_bytes_per_s"] for q in probes]
    kind = re.sub(r"[^a-z0-9]+", "-", re.sub(r"\((r|tm)\)|processor|cpu", "", probe["cpu"].lower())).strip("-") or "unknown"
    points, runs = [], 0
    for dtype in dtypes:
        for op in ops:
            before, after = triads[runs], triads[runs + 1]
            for p in json.load(open(f"{tmp}/{level}/{op}-{dtype}.json"))["points"]:
                p["triad_before_bytes_per_s"], p["triad_after_bytes_per_s"] = before, after
                p["pct_of_bracketing_triad"] = p["gbps"] * 1e9 / ((before + after) / 2) * 100
                points.append(p)
            runs += 1
    gemm_op = next(o for o in json.load(open(f"{tmp}/{level}/list.json"))["ops"] if o["op"] == "gemm")
    openblas = next(v["note"] for v in gemm_op["variants"] if v["name"] == "openblas")
    gemm = []
    for n in sizes:
        gemm += json.load(open(f"{tmp}/{level}/gemm-{n}.json"))["points"]
    out = f"{out_root}/{kind}/{time.strftime('%Y-%m-%d', time.gmtime())}-{commit}-{level}.json"
    os.makedirs(os.path.dirname(out), exist_ok=True)
    command = ("KERNELAB_CPU_ISA=LEVEL kernelab probe --json before each OP and DTYPE and after the last; "
               "KERNELAB_CPU_ISA=LEVEL kernelab bench OP --backend cpu --rows 16384 --cols 8192 --dtype DTYPE --max-seconds 0.5 --json; "
               "kernelab bench gemm --m N --n N --k N --dtype fp32 --backend cpu --variant cpu_tiled openblas --max-seconds 2 --json")
    json.dump({"command": command, "probe": probe, "points": points, "gemm": gemm, "openblas": openblas}, open(out, "w"), indent=2)
    print(f"wrote {out}")
    print(f"{probe['cpu']}: {probe['threads']} threads, {probe['isa_used']} rungs ({probe['isa_extensions']}) on an {probe['isa_cpu']} CPU, "
          f"huge pages {probe['huge_pages']}, triad {probe['triad_bytes_per_s'] / 1e9:.1f} GB/s")
    print(f"  triad before each op and after the last: {min(triads) / 1e9:.1f}-{max(triads) / 1e9:.1f} GB/s")
    for p in points:
        print(f"  {p['op']:<10} {p['variant']:<12} {p['dtype']:<5} {p['median_s']*1e3:8.1f} ms {p['gbps']:6.1f} GB/s "
              f"{p['pct_of_bracketing_triad']:6.1f}% of the triad around it ({p['triad_before_bytes_per_s'] / 1e9:.1f}, "
              f"{p['triad_after_bytes_per_s'] / 1e9:.1f} GB/s)")
    for n in sizes:
        t = {p["variant"]: p["median_s"] for p in gemm if f"m={n}," in p["shape"]}
        if "cpu_tiled" in t and "openblas" in t:
            print(f"  gemm {n}^3 fp32: cpu_tiled {t['cpu_tiled']*1e3:.1f} ms, openblas ({openblas.split('; ')[-1]}) {t['openblas']*1e3:.1f} ms: "
                  f"{t['openblas'] / t['cpu_tiled'] * 100:.0f}% of OpenBLAS's speed")
PY
