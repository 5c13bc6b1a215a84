#!/usr/bin/env python3
"""Folds what scripts/device-check.sh measured (its unpacked results.tgz) into the one file that
bench/results/h200/ keeps and `kernelab report` reads: every bench, sweep and report point (each
timed only after its output passed the float64 reference check), the probe's ceilings, the GPU and
the check tallies per op; the file's name carries the date (the report reads it from there).

Usage: scripts/device_results.py RESULTS_FOLDER OUT.json"""
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


def check_tallies(folder):
    """op -> the last line of `kernelab check OP --backend cuda` ("all variants passed" or the failures)."""
    out = {}
    for path in sorted((folder / "check").glob("*.txt")):
        lines = [l for l in path.read_text(errors="replace").splitlines() if l.strip()]
        out[path.stem] = lines[-1] if lines else "no output"
    return out


def main(folder, out):
    folder = pathlib.Path(folder)
    points = []
    for source, p in points_of(folder):
        p["source"] = source
        points.append(p)
    if not points:
        sys.exit(f"{folder}: no cuda points found")
    gpu_lines = (folder / "gpu.txt").read_text().splitlines() if (folder / "gpu.txt").exists() else []
    commits = sorted({p.get("commit", "") for p in points})
    result = {
        "gpu": gpu_lines,
        "commits": commits,
        "probe": load(folder / "probe.json"),
        "checks": check_tallies(folder),
        "points": points,
    }
    pathlib.Path(out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"{out}: {len(points)} cuda points from {len({s for s, _ in points_of(folder)})} files; commits {commits}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
