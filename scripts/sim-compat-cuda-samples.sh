#!/usr/bin/env bash
# Runs the CUDA toolkit's samples (github.com/NVIDIA/cuda-samples, BSD-3-Clause, commit c94ff36)
# under `kernelab sim run`, unchanged, each for at most 120 s, and writes one line per sample:
#   folder/sample  result  exit-code  seconds  first line that says why
# result: pass (exit 0), fail (its own check failed or the simulator reported), compile (does
# not build for the simulator: the line names what is missing), waived (the sample declined
# to run: exit 2 with "Waiving"), timeout.
#   scripts/sim-compat-cuda-samples.sh CUDA_SAMPLES_CHECKOUT [FOLDER...]
set -uo pipefail
root=${1:?usage: sim-compat-cuda-samples.sh CUDA_SAMPLES_CHECKOUT [FOLDER...]}
shift
here=$(cd "$(dirname "$0")/.." && pwd)
kernelab=${KERNELAB:-$here/build/kernelab}
[ -d "$root/Common" ] || { echo "sim-compat-cuda-samples: $root/Common not found: pass a cuda-samples checkout" >&2; exit 2; }
folders=("$@")
[ ${#folders[@]} -gt 0 ] || folders=(0_Introduction 1_Utilities 2_Concepts_and_Techniques 3_CUDA_Features 6_Performance)
log=$(mktemp)
for folder in "${folders[@]}"; do
  for dir in "$root/Samples/$folder"/*/; do
    sample=$folder/$(basename "$dir")
    mapfile -t sources < <(ls "$dir"*.cu "$dir"*.cpp "$dir"*.cc 2>/dev/null | grep -v '_nvrtc')
    [ ${#sources[@]} -gt 0 ] || continue
    main=$(grep -l -E '^\s*int\s+main\s*\(' "${sources[@]}" | head -1)
    [ -n "$main" ] || main=${sources[0]}
    others=(); for s in "${sources[@]}"; do [ "$s" = "$main" ] || others+=("$s"); done
    flags=(-I "$root/Common")
    grep -q -E '#include\s*<omp.h>' "${sources[@]}" && flags+=(-Xcompiler -fopenmp)
    start=$(date +%s)
    (cd "$dir" && timeout 120 "$kernelab" sim run "${flags[@]}" "$main" "${others[@]}" --) > "$log" 2>&1 < /dev/null
    rc=$?
    if [ $rc -eq 124 ]; then result=timeout
    elif grep -q 'does not compile for the simulator' "$log"; then result=compile
    elif [ $rc -eq 2 ] && grep -qi 'waiv' "$log"; then result=waived
    elif [ $rc -eq 0 ]; then result=pass
    else result=fail; fi
    why=$(grep -m1 'does not implement' "$log")
    [ -n "$why" ] || why=$(grep -v 'cudaEventElapsedTime gives' "$log" |
                           grep -m1 -E 'error:|kernelab sim:|FAIL|Waiv|Assertion|CUDA error')
    why=${why:0:300}
    printf '%s\t%s\t%s\t%ss\t%s\n' "$sample" "$result" "$rc" "$(( $(date +%s) - start ))" "$why"
  done
done
rm -f "$log"
