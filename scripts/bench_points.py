"""The bench JSON files a device-check script wrote, as (name, points) pairs: what the summaries
share. A file that is not JSON, or has no points, is reported and skipped."""
import json
import pathlib


def measured_files(folder, what):
    """Yields (file stem, points) for each *.json in folder with points; None when there is no file."""
    files = sorted(pathlib.Path(folder).glob("*.json"))
    if not files:
        print(f"no {what} bench results in {folder}")
        return None
    return _points(files)


def _points(files):
    for f in files:
        try:
            points = json.loads(f.read_text()).get("points", [])
        except json.JSONDecodeError:
            print(f"{f.stem}: not JSON (the bench call failed; see its log)")
            continue
        if not points:
            print(f"{f.stem}: no points (nothing ran)")
            continue
        yield f.stem, points
