#!/usr/bin/env python3
"""An independent computation of `kernelab trace analyze --json` over several ranks' traces.

It reads each trace with the json module, applies the definitions stated in src/trace/ranks.h
(HTA's kernel types from scripts/trace_reference.py), computes per rank the communication time,
compute time, overlapped and exposed communication, matches the collectives (by args.seq, or per
name in order when they overlap) and finds the last rank to arrive and its lag; on GPU traces with
one device it also checks the communication time and its overlap against trace_reference.py's
HTA overlap figures. Compares all of it with kernelab's JSON; exit 1 on a mismatch.

  scripts/trace_ranks_reference.py --kernelab build/kernelab TRACE_OR_DIR...

Exit 77 with --skip-missing when a given path does not exist (ctest: skipped).
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_reference as ref  # noqa: E402

HOST_COMM = ("kernelab:", "gloo:", "mpi:")
WRAPPERS = HOST_COMM + ("nccl:", "c10d::")


def files_of(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".json") or f.endswith(".json.gz"))
        else:
            out.append(p)
    return out


def read(path):
    doc = ref.read_doc(path)
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    rank = doc.get("distributedInfo", {}).get("rank", -1) if isinstance(doc, dict) else -1
    xs = [e for e in events if e.get("ph") == "X" and "ts" in e and "dur" in e]
    gpu = any(e.get("cat") in ("kernel", "Kernel") for e in xs)
    comm, compute = [], []
    for e in xs:
        cat, name = e.get("cat"), e.get("name", "")
        s = ref.to_ns(e["ts"])
        iv = (s, s + ref.to_ns(e["dur"]))
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        if gpu and cat in ("kernel", "Kernel"):
            kind = ref.kernel_type(name)
            if kind == "communication":
                comm.append((iv, name, args.get("seq", -1)))
            elif kind == "computation":
                compute.append(iv)
        elif not gpu and cat in ("cpu_op", "Operator", "user_annotation"):
            if name.startswith(HOST_COMM):
                comm.append((iv, name, args.get("seq", -1)))
            elif cat != "user_annotation" and not name.startswith(WRAPPERS) and name != "record_param_comms":
                compute.append(iv)
    comm.sort(key=lambda c: c[0][0])
    return {"path": path, "rank": rank, "gpu": gpu, "comm": comm, "compute": compute}


def match(ranks):
    n = len(ranks)
    if all(c[2] is not None and c[2] != -1 for r in ranks for c in r["comm"]):
        by_seq = {}
        for i, r in enumerate(ranks):
            for c in r["comm"]:
                by_seq.setdefault(c[2], [None] * n)[i] = c
        out = [m for _, m in sorted(by_seq.items()) if all(m) and len({c[1] for c in m}) == 1]
        return "seq", out
    out = []
    names = sorted({c[1] for r in ranks for c in r["comm"]})
    for name in names:
        lists = [[c for c in r["comm"] if c[1] == name] for r in ranks]
        pos = [0] * n
        while all(pos[i] < len(lists[i]) for i in range(n)):
            cur = [lists[i][pos[i]] for i in range(n)]
            latest_start = max(c[0][0] for c in cur)
            earliest_end = min(c[0][1] for c in cur)
            if latest_start > earliest_end:
                pos[min(range(n), key=lambda i: cur[i][0][1])] += 1
            else:
                out.append(cur)
                pos = [p + 1 for p in pos]
    return "order", out


def near(a, b):
    return abs(a - b) <= 1e-3 + 1e-9 * abs(b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernelab", required=True)
    ap.add_argument("--skip-missing", action="store_true")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    if a.skip_missing and not all(os.path.exists(p) for p in a.paths):
        print("missing:", [p for p in a.paths if not os.path.exists(p)])
        return 77
    ranks = [read(f) for f in files_of(a.paths)]
    for i, r in enumerate(ranks):
        if r["rank"] < 0:
            r["rank"] = i
    ranks.sort(key=lambda r: r["rank"])
    got = json.loads(subprocess.run([a.kernelab, "trace", "analyze", "--json"] + a.paths, check=True,
                                     capture_output=True, text=True).stdout)
    bad = []
    for r, g in zip(ranks, got["ranks"]):
        comm, comp = ref.merge([c[0] for c in r["comm"]]), ref.merge(r["compute"])
        over = ref.intersection(comm, comp)
        want = {"rank": r["rank"], "comm_us": ref.length(comm) / 1e3, "compute_us": ref.length(comp) / 1e3,
                "overlapped_us": over / 1e3, "exposed_comm_us": (ref.length(comm) - over) / 1e3, "comm_events": len(r["comm"])}
        if r["gpu"]:
            gpu, _, streams = ref.load(r["path"])
            devices = {e["device"] for e in gpu}
            if len(devices) == 1:  # trace_reference.py's HTA overlap of that device
                hta = ref.reference(r["path"])["overlap"].get(str(devices.pop()))
                if hta:
                    for key, hkey in (("comm_us", "communication_us"), ("overlapped_us", "overlapped_us")):
                        if not near(want[key], hta[hkey]):
                            bad.append(f"rank {r['rank']} {key}: {want[key]} here, {hta[hkey]} in trace_reference.py")
        for k, v in want.items():
            if not near(float(g[k]), float(v)):
                bad.append(f"rank {r['rank']} {k}: kernelab {g[k]}, reference {v}")
        print(f"rank {r['rank']}: " + ", ".join(f"{k} {v:g}" for k, v in want.items() if k != "rank"))
    by, matched = match(ranks)
    matched.sort(key=lambda m: min(c[0][0] for c in m))
    if by != got["matched_by"] or len(matched) != len(got["collectives"]):
        bad.append(f"matching: reference {by} {len(matched)}, kernelab {got['matched_by']} {len(got['collectives'])}")
    for m, g in zip(matched, got["collectives"]):
        starts = [c[0][0] for c in m]
        last = max(range(len(m)), key=lambda i: (starts[i], -i))
        lag = (starts[last] - min(starts)) / 1e3
        if not near(lag, g["lag_us"]) or (lag > 0 and ranks[last]["rank"] != g["slowest_rank"]):
            bad.append(f"{m[0][1]} at {min(starts)}: reference rank {ranks[last]['rank']} lag {lag}, kernelab {g['slowest_rank']} {g['lag_us']}")
    print(f"{len(matched)} collectives matched by {by}; largest lag "
          f"{max(((max(c[0][0] for c in m) - min(c[0][0] for c in m)) / 1e3 for m in matched), default=0):g} us")
    for b in bad:
        print("MISMATCH", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
