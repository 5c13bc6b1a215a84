#!/bin/bash
# Wall time and peak RSS of `kernelab trace analyze` for two builds on the same traces, runs
# interleaved (A, B, A, B, ...) so machine load hits both alike; prints the median of each.
#   scripts/trace_speed_compare.sh OLD_KERNELAB NEW_KERNELAB RUNS TRACE... [-- EXTRA_ARGS]
set -euo pipefail
old=$1 new=$2 runs=$3
shift 3
traces=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do traces+=("$1"); shift; done
[ $# -gt 0 ] && shift
extra=("$@")
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
printf '%-40s %10s %10s %7s %10s %10s %7s\n' trace old_s new_s ratio old_MiB new_MiB ratio
for t in "${traces[@]}"; do
  : > /tmp/speed_old_s; : > /tmp/speed_new_s; : > /tmp/speed_old_kb; : > /tmp/speed_new_kb
  for _ in $(seq "$runs"); do
    for which in old new; do
      bin=$old; [ $which = new ] && bin=$new
      /usr/bin/time -f '%e %M' -o /tmp/speed_time "$bin" trace analyze "${extra[@]}" "$t" > /dev/null
      read -r s kb < /tmp/speed_time
      echo "$s" >> /tmp/speed_${which}_s; echo "$kb" >> /tmp/speed_${which}_kb
    done
  done
  os=$(median < /tmp/speed_old_s); ns=$(median < /tmp/speed_new_s)
  ok=$(median < /tmp/speed_old_kb); nk=$(median < /tmp/speed_new_kb)
  awk -v t="$(basename "$t")" -v os="$os" -v ns="$ns" -v ok="$ok" -v nk="$nk" 'BEGIN {
    printf "%-40s %10.3f %10.3f %7.2f %10.1f %10.1f %7.2f\n", t, os, ns, ns / os, ok / 1024, nk / 1024, nk / ok }'
done
