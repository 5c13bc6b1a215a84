#!/usr/bin/env python3
"""Folds what scripts/device-check.sh measured (its unpacked results.tgz) into the one file that
bench/results/h200/ keeps and `kernelab report` reads: every bench, sweep and report point (each
timed only after its output passed the float64 reference check), the probe's ceilings, the GPU, and
every row of the check tables (a variant that failed its GPU check is shown so, points or not), and
when the run ended.

Usage: scripts/device_results.py RESULTS_FOLDER OUT.json"""
import datetime
import json
import pathlib
import sys


def load(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def points_of(folder):
    """(source file, point) for every point in the folder's bench, sweep and report files."""
    for path in sorted(folder.rglob("*")):
        if path.suffix not in (".json", ".sweep") or path.name in ("probe.json", "trace-analysis.json"):
            continue
        data = load(path)
        if isinstance(data, dict):
            for p in data.get("points", []):
                if p.get("backend") == "cuda":
                    yield str(path.relative_to(folder)), p


def check_rows(folder):
    """Every row of `kernelab check OP --backend cuda`'s table in check/OP.txt: op, variant, config,
    dtype, passed ("18/24"), max_rel_err, tolerance and status ("ok", "FAIL <shape>: <why>", "skipped: ...")."""
    rows = []
    for path in sorted((folder / "check").glob("*.txt")):
        for line in path.read_text(errors="replace").splitlines():
            cells = line.split(None, 9)
            if len(cells) < 10 or cells[0] == "op" or cells[3] != "cuda":
                continue
            op, variant, config, _, dtype, passed, _, err, tol, status = cells
            rows.append({"op": op, "variant": variant, "config": config, "dtype": dtype, "passed": passed,
                         "max_rel_err": float(err), "tolerance": float(tol), "status": status})
    return rows


def main(folder, out):
    folder = pathlib.Path(folder)
    points = []
    for source, p in points_of(folder):
        p["source"] = source
        points.append(p)
    if not points:
        sys.exit(f"{folder}: no cuda points found")
    gpu_lines = (folder / "gpu.txt").read_text().splitlines() if (folder / "gpu.txt").exists() else []
    # The binary's commit (device-prepare.sh wrote it), over what points read at run time: before
    # 2026-12-04 kernelab took `git describe` of the tree it ran in, the device's copy, not the build's.
    built = next((l.split("binaries built at ", 1)[1].split(";")[0] for l in gpu_lines if "binaries built at " in l), None)
    if built and not built.startswith("unknown"):
        for p in points:
            if p.get("commit") != built:
                p["commit_read_at_run_time"] = p.get("commit")
                p["commit"] = built
    commits = sorted({p.get("commit", "") for p in points})
    # When the run ended: its newest file (the archive keeps the device's times). The report orders
    # results files by this, so a later run on the same day wins.
    newest = max(f.stat().st_mtime for f in folder.rglob("*") if f.is_file())
    result = {
        "generated_at": datetime.datetime.fromtimestamp(newest, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": gpu_lines,
        "commits": commits,
        "probe": load(folder / "probe.json"),
        "checks": check_rows(folder),
        "points": points,
    }
    pathlib.Path(out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"{out}: {len(points)} cuda points from {len({s for s, _ in points_of(folder)})} files; commits {commits}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
