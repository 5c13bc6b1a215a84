#!/usr/bin/env python3
"""The simulator's memory metrics against Nsight Compute's (Python stdlib only).

Reads what the simulator counted (`kernelab sim profile OP ... --json`, or `kernelab sim run
--profile --json prog.cu`) and what ncu measured (`ncu --csv --page raw --metrics LIST ...`),
sums ncu's launches per kernel, and prints per kernel and metric: sim, ncu, sim/ncu and a verdict.

  scripts/ncu_compare.py SIM.json NCU.csv [--json]   the table (--json: one JSON object instead)
  scripts/ncu_compare.py --metrics-list [--available QUERY.txt]
      the comma-separated list to pass to `ncu --metrics`; with --available (the output of
      `ncu --query-metrics`) only the metrics that ncu lists, so an older ncu does not refuse the run

Verdicts: "exact" / "DIFFERS" for the counts ncu measures exactly (l1tex requests, sectors,
wavefronts, bank conflicts, ldsm/ldgsts/hmma instructions); "modelled" for the simulator's DRAM
model against dram__bytes_*, which only a ratio can judge; "n/a on this ncu" where ncu printed no
such column; "not in sim" where the simulator's JSON lacks the metric.

Kernel names are matched after normalising both sides the way src/ops/contract.cpp's
plain_kernel_name does: ncu's "void kl::cuda::(anonymous namespace)::transpose_naive<4>(float*,
...)" becomes "transpose_naive<4>"; so does the form ncu 2025 prints, "void unnamed>::
transpose_naive<4>(const Bits<T1>::T *, ...)" (its "<unnamed>" namespace with the "<" lost, also
inside template arguments: "through_tile<4, unnamed>::Plain, 8>"). Bool template arguments compare
as numbers (the simulator's "path_chains<false>" is ncu's "path_chains<0>"). Where the simulator
reports a kernel several times (one rung each) and ncu saw as many launches of it, the launches
are paired in order, the first simulator kernel with ncu's first launch(es) of that name; otherwise
launches are kept apart per block size where both sides give block sizes that agree (two configs
of one kernel), or summed; where the simulator and ncu saw a different number of launches, the
per-launch means are compared and the kernel says so.

Exit 0 whatever the verdicts; 2 with a message when an input is unreadable or not what it should be.
"""
import argparse
import csv
import json
import math
import re
import sys

# (simulator key, ncu keys summed for it, kind). The simulator cannot tell RED from ATOM, so its
# op_atom counts compare with ncu's op_atom + op_red.
_ATOM = "l1tex__t_{}_pipe_lsu_mem_global_op_atom.sum"
_RED = "l1tex__t_{}_pipe_lsu_mem_global_op_red.sum"
COMPARED = [
    ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",), "exact"),
    ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",), "exact"),
    ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",), "exact"),
    ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",), "exact"),
    (_ATOM.format("requests"), (_ATOM.format("requests"), _RED.format("requests")), "exact"),
    (_ATOM.format("sectors"), (_ATOM.format("sectors"), _RED.format("sectors")), "exact"),
    ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",), "exact"),
    ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",), "exact"),
    ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",), "exact"),
    ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",), "exact"),
    ("smsp__inst_executed_op_ldsm.sum", ("smsp__inst_executed_op_ldsm.sum",), "exact"),
    ("l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum", ("l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum",), "exact"),
    ("l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum", ("l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum",), "exact"),
    ("sm__inst_executed_pipe_tensor_op_hmma.sum", ("sm__inst_executed_pipe_tensor_op_hmma.sum",), "exact"),
    ("model__dram_bytes_read.sum", ("dram__bytes_read.sum",), "modelled"),
    ("model__dram_bytes_write.sum", ("dram__bytes_write.sum",), "modelled"),
]
COMPARED_SIM_KEYS = {sim for sim, _, _ in COMPARED}
# ncu counts subtracted from a row's sum: the tensor pipe's instruction count includes HFMA2.MMA, which
# the compiler also issues in kernels with no matrix instruction (an H200, 2026-12-04: thousands in
# softmax and layernorm against the simulator's 0).
MINUS = {"sm__inst_executed_pipe_tensor_op_hmma.sum": ("sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum",)}

# ncu's auto-scaled units (the default without --print-units base): decimal prefixes of a base unit.
_UNIT_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_SCALED_UNIT = re.compile(r"^([KMGT]?)(byte|sector|request|wavefront|inst|warp|thread|cycle)s?$")


class InputError(Exception):
    """An input that is unreadable or not the format it should be (exit 2)."""


def metrics_list(available=None):
    """The ncu metric names to request, in order, each once; only those in `available` if given."""
    out = []
    for sim_key, ncu_keys, _ in COMPARED:
        for k in ncu_keys + MINUS.get(sim_key, ()):
            if k not in out:
                out.append(k)
    if available:
        out = [k for k in out if k in available or k.split(".")[0] in available]
    return out


def read_available(path):
    """Metric names (base names and full names) from `ncu --query-metrics` output: each line's first word."""
    names = set()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            words = line.split()
            if words and re.match(r"^[a-z0-9]+__[A-Za-z0-9_.]+$", words[0]):
                names.add(words[0])
    return names


# ---------------------------------------------------------------------------------------------
# Kernel names


# The anonymous namespace as demanglers spell it: "(anonymous namespace)" (c++filt), "{anonymous}"
# (gcc), "`anonymous namespace'" (MSVC), "<unnamed>" (ncu) and "unnamed>" (ncu's CSV, the "<" lost;
# "f<unnamed>::X>" is f's template argument X). A "<unnamed>" counts as whole only where no name
# or template argument list precedes it.
_ANON_NS = re.compile(r"(?:\(anonymous namespace\)|\{anonymous\}|`anonymous namespace'|anonymous namespace"
                      r"|(?<![A-Za-z0-9_>])<unnamed>|\bunnamed>)::")


def _strip_params(s):
    """Cut the parameter list: the first '(' at template depth 0 that follows the name directly."""
    depth = 0
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)  # a stray '>' (an "unnamed>" left over) does not go below 0
        elif ch == "(" and depth == 0 and i > 0 and s[i - 1] != " ":
            return s[:i]
    return s


def plain_name(name):
    """The bare kernel name, as src/ops/contract.cpp's plain_kernel_name makes it."""
    s = _ANON_NS.sub("", name.strip())
    s = _strip_params(s)  # before the namespaces go: the parameters can hold "Bits<T1>::T *"
    s = re.sub(r"[A-Za-z_][A-Za-z0-9_]*::", "", s)
    s = re.sub(r"\b([0-9]+)(?:ull|ul|ll|u|l)\b", r"\1", s, flags=re.IGNORECASE)
    if s.startswith("void "):
        s = s[5:]
    return s.strip()


def match_key(name):
    """plain_name with whitespace made canonical ("float *" == "float*", "<a, b>" == "<a,b>")."""
    s = re.sub(r"\s+", " ", plain_name(name))
    s = re.sub(r" ?([^A-Za-z0-9_ ]) ?", r"\1", s)
    # "(int)8" and "8" are the same template argument, whichever demangler wrote it.
    s = re.sub(r"\((?:unsigned |signed )?(?:int|long|long long|short|char|bool)\)(?=-?\d)", "", s)
    # A bool argument: the simulator writes "true"/"false", ncu's demangler 1/0.
    return re.sub(r"\b(true|false)\b", lambda m: "1" if m.group(1) == "true" else "0", s)


def function_name(key):
    """A match key without its template arguments ("transpose_naive<4>" -> "transpose_naive")."""
    return key.split("<", 1)[0]


# ---------------------------------------------------------------------------------------------
# Numbers


def parse_number(text):
    """ncu's value text as a float; None for empty or n/a. Thousands separators are dropped."""
    t = text.strip().replace("\u202f", "").replace("\u00a0", "").replace(" ", "")
    if t == "" or t.lower() in ("n/a", "nan", "-", "(!)n/a"):
        return None
    if t.count(".") > 1 and "," not in t:  # "27.595.520": a locale with '.' between thousands
        t = t.replace(".", "")
    elif t.count(".") > 1 and "," in t and t.rfind(",") > t.rfind("."):  # "1.234.567,5"
        t = t.replace(".", "").replace(",", ".")
    else:
        t = t.replace(",", "")
    try:
        return float(t)
    except ValueError:
        return None


def unit_scale(unit):
    """(factor to the base unit, whether it was scaled) for one of ncu's unit names."""
    m = _SCALED_UNIT.match(unit.strip())
    if not m:
        return 1.0, False
    return _UNIT_PREFIX[m.group(1)], m.group(1) != ""


def parse_dims(text):
    """"(32, 8, 1)" -> (32, 8, 1); None when there are no numbers. With ", " between the
    dimensions, a comma inside one is a thousands separator ("(1,024, 1, 1)")."""
    if not text:
        return None
    inner = text.strip().strip("()[]")
    parts = re.split(r",\s+", inner) if ", " in inner else re.split(r"[,x ]", inner)
    nums = []
    for part in parts:
        digits = part.replace(",", "").strip()
        if not digits.isdigit():
            return None
        nums.append(int(digits))
    return tuple(nums) if nums else None


def dims_of(value):
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, int) for v in value):
        return tuple(value)
    return None


def fmt_dims(d):
    return "(" + ",".join(str(x) for x in d) + ")" if d else "?"


def fmt_value(v):
    if v is None:
        return "-"
    if isinstance(v, float) and (math.isinf(v) or math.isnan(v)):
        return str(v)
    if float(v).is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.6g}"


# ---------------------------------------------------------------------------------------------
# The simulator's JSON


def read_sim(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise InputError(f"cannot read the simulator JSON {path}: {e.strerror}") from e
    except ValueError as e:
        raise InputError(f"{path} is not JSON: {e}") from e
    if not isinstance(doc, dict):
        raise InputError(f"{path}: expected a JSON object with 'rungs' or 'kernels', found {type(doc).__name__}")
    if isinstance(doc.get("rungs"), list):
        rungs = doc["rungs"]
    elif isinstance(doc.get("kernels"), list):
        rungs = [{"variant": None, "config": None, "sampled_blocks": None, "kernels": doc["kernels"]}]
    elif isinstance(doc.get("cases"), list):  # sim profile with no shape: one profile per case, ncu ran one problem
        raise InputError(f"{path}: profiles of several problems ('cases'); run `sim profile` with the shape ncu ran")
    else:
        raise InputError(f"{path}: expected a 'rungs' list (sim profile) or a 'kernels' list (sim run --profile)")
    kernels = []
    for ri, rung in enumerate(rungs):
        if not isinstance(rung, dict) or not isinstance(rung.get("kernels"), list):
            raise InputError(f"{path}: rungs[{ri}] has no 'kernels' list")
        for ki, k in enumerate(rung["kernels"]):
            where = f"{path}: rungs[{ri}].kernels[{ki}]" if "rungs" in doc else f"{path}: kernels[{ki}]"
            if not isinstance(k, dict) or not isinstance(k.get("name"), str) or not k["name"]:
                raise InputError(f"{where} has no 'name'")
            metrics = k.get("metrics")
            if not isinstance(metrics, dict):
                raise InputError(f"{where} ({k['name']}) has no 'metrics' object")
            clean = {}
            for key, v in metrics.items():
                if v is None:
                    continue
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise InputError(f"{where} ({k['name']}): metric {key} is {v!r}, not a number")
                clean[key] = float(v)
            launches = k.get("launches", 1)
            if isinstance(launches, bool) or not isinstance(launches, int) or launches < 0:
                raise InputError(f"{where} ({k['name']}): 'launches' is {launches!r}, not a count")
            kernels.append({"name": k["name"], "key": match_key(k["name"]), "launches": launches,
                            "block": dims_of(k.get("block")), "grid": dims_of(k.get("grid")), "metrics": clean,
                            "variant": rung.get("variant"), "config": rung.get("config"),
                            "sampled_blocks": rung.get("sampled_blocks")})
    header = {key: doc.get(key) for key in ("op", "problem", "gpu") if doc.get(key) is not None}
    return header, kernels


# ---------------------------------------------------------------------------------------------
# ncu's CSV


def _csv_row(line):
    try:
        return next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return None


def read_ncu(path):
    """Launches from ncu's CSV: [{"key", "name", "block", "values": {metric: float|None}}], and notes.

    The raw page (--page raw) has one column per metric and one row per launch, with a units row
    under the header in most versions; the details page (no --page raw) has one row per metric
    ("Metric Name", "Metric Unit", "Metric Value"), pivoted here by launch ID. Lines that are not
    the CSV (==PROF== messages, the profiled program's own output) are skipped.
    """
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise InputError(f"cannot read ncu's CSV {path}: {e.strerror}") from e
    header, start = None, 0
    for i, line in enumerate(lines):
        if "Kernel Name" not in line:
            continue
        row = _csv_row(line)
        if row and "Kernel Name" in row and "ID" in row:
            header, start = [c.strip() for c in row], i + 1
            break
    if header is None:
        errors = [ln.strip() for ln in lines if ln.startswith("==ERROR==")][:3]
        why = ("; ncu said: " + " | ".join(errors)) if errors else ""
        raise InputError(f"{path}: no ncu CSV header (a row with \"ID\" and \"Kernel Name\") found{why}")
    col = {name: i for i, name in reversed(list(enumerate(header)))}
    id_at, name_at = col["ID"], col["Kernel Name"]
    block_at = col.get("Block Size")
    long_form = "Metric Name" in col and "Metric Value" in col
    notes = {"units_row": False, "scaled_units": set(), "skipped_lines": 0}
    units = {}
    rows = []
    for line in lines[start:]:
        row = _csv_row(line)
        if row is None or len(row) != len(header):
            notes["skipped_lines"] += 1 if line.strip() else 0
            continue
        ident = row[id_at].strip()
        if ident == "" and row[name_at].strip() == "" and not rows and not notes["units_row"]:
            notes["units_row"] = True
            units = {header[i]: row[i].strip() for i in range(len(header))}
            continue
        if not re.fullmatch(r"\d+", ident.replace(",", "")):
            notes["skipped_lines"] += 1
            continue
        rows.append(row)

    launches = {}
    order = []
    for row in rows:
        ident = row[id_at].strip().replace(",", "")
        if ident not in launches:
            name = row[name_at].strip()
            launches[ident] = {"name": name, "key": match_key(name),
                               "block": parse_dims(row[block_at]) if block_at is not None else None, "values": {}}
            order.append(ident)
        values = launches[ident]["values"]
        if long_form:
            metric = row[col["Metric Name"]].strip()
            unit = row[col["Metric Unit"]].strip() if "Metric Unit" in col else ""
            pairs = [(metric, unit, row[col["Metric Value"]])] if metric else []
        else:
            pairs = [(header[i], units.get(header[i], ""), row[i]) for i in range(len(header)) if "__" in header[i]]
        for metric, unit, text in pairs:
            v = parse_number(text)
            factor, scaled = unit_scale(unit)
            if scaled:
                notes["scaled_units"].add(f"{metric} in {unit}")
            values[metric] = None if v is None else v * factor
    if long_form:
        columns = {m for launch in launches.values() for m in launch["values"]}
    else:
        columns = {h for h in header if "__" in h}
    return [launches[i] for i in order], columns, notes


# ---------------------------------------------------------------------------------------------
# Matching and comparing


def _add_sim(group, k):
    group["launches"] += k["launches"]
    for m, v in k["metrics"].items():
        group["metrics"][m] = group["metrics"].get(m, 0.0) + v
    rung = " ".join(str(x) for x in (k["variant"], k["config"]) if x)
    if rung and rung not in group["rungs"]:
        group["rungs"].append(rung)
    sb = k["sampled_blocks"]
    if isinstance(sb, dict) and sb.get("run") is not None and sb.get("run") != sb.get("total"):
        group["sampled"].append(f"{sb.get('run')}/{sb.get('total')}")
    if k["block"] and k["block"] not in group["blocks"]:
        group["blocks"].append(k["block"])
    if k["grid"] and k["grid"] not in group["grids"]:
        group["grids"].append(k["grid"])


def _add_ncu(group, launch):
    group["launches"] += 1
    for m, v in launch["values"].items():
        if v is not None:
            group["metrics"][m] = group["metrics"].get(m, 0.0) + v
        group["seen"].add(m)
    if launch["block"] and launch["block"] not in group["blocks"]:
        group["blocks"].append(launch["block"])


def _new_sim_group(name):
    return {"name": name, "launches": 0, "metrics": {}, "rungs": [], "sampled": [], "blocks": [], "grids": []}


def _new_ncu_group(name):
    return {"name": name, "launches": 0, "metrics": {}, "seen": set(), "blocks": []}


def _pair_in_order(sim_ks, launches):
    """[(simulator kernel, its ncu launches)] when one name's simulator kernels (one per rung) take
    ncu's launches of that name in order: more than one simulator kernel, each with launches, as many
    launches in all as ncu saw, and no pair whose block sizes (where both sides give them) differ.
    None otherwise (then the launches are split by block size or summed)."""
    if len(sim_ks) < 2 or any(k["launches"] < 1 for k in sim_ks):
        return None
    if sum(k["launches"] for k in sim_ks) != len(launches):
        return None
    out, at = [], 0
    for k in sim_ks:
        ns = launches[at:at + k["launches"]]
        at += k["launches"]
        if k["block"] and any(n["block"] and n["block"] != k["block"] for n in ns):
            return None
        out.append((k, ns))
    return out


def pair_kernels(sim_kernels, ncu_launches):
    """[(sim group, ncu group or None, how)], ncu groups with no simulator kernel."""
    sim_by_key, ncu_by_key = {}, {}
    for k in sim_kernels:
        sim_by_key.setdefault(k["key"], []).append(k)
    for launch in ncu_launches:
        ncu_by_key.setdefault(launch["key"], []).append(launch)

    # Names ncu printed without template arguments (--print-kernel-base function): match on the
    # function name where that is unambiguous on both sides.
    alias = {}
    unmatched_ncu = [k for k in ncu_by_key if k not in sim_by_key]
    for key in sim_by_key:
        if key in ncu_by_key:
            continue
        fn = function_name(key)
        sims = [s for s in sim_by_key if function_name(s) == fn]
        ncus = [n for n in unmatched_ncu if function_name(n) == fn]
        if len(sims) == 1 and len(ncus) == 1:
            alias[key] = ncus[0]

    pairs, used = [], set()
    for key, ks in sim_by_key.items():
        nkey = key if key in ncu_by_key else alias.get(key)
        launches = ncu_by_key.get(nkey, []) if nkey else []
        how = "name" if nkey == key else "function name only" if nkey else None
        if nkey:
            used.add(nkey)
        in_order = _pair_in_order(ks, launches)
        if in_order:
            for i, (k, ns) in enumerate(in_order):
                sg, ng = _new_sim_group(k["name"]), _new_ncu_group(ns[0]["name"])
                _add_sim(sg, k)
                for n in ns:
                    _add_ncu(ng, n)
                pairs.append((sg, ng, f"{how}, {i + 1} of {len(in_order)} in launch order"))
            continue
        sim_blocks = {k["block"] for k in ks}
        ncu_blocks = {n["block"] for n in launches}
        split = (launches and None not in sim_blocks and None not in ncu_blocks and len(sim_blocks) > 1
                 and sim_blocks == ncu_blocks)
        if split:
            for block in sorted(sim_blocks):
                sg, ng = _new_sim_group(ks[0]["name"]), _new_ncu_group(launches[0]["name"])
                for k in ks:
                    if k["block"] == block:
                        _add_sim(sg, k)
                for n in launches:
                    if n["block"] == block:
                        _add_ncu(ng, n)
                pairs.append((sg, ng, how + ", block " + fmt_dims(block)))
            continue
        sg = _new_sim_group(ks[0]["name"])
        for k in ks:
            _add_sim(sg, k)
        ng = None
        if launches:
            ng = _new_ncu_group(launches[0]["name"])
            for n in launches:
                _add_ncu(ng, n)
            if None not in sim_blocks and None not in ncu_blocks and sim_blocks != ncu_blocks:
                how += (" (block sizes differ: sim " + " ".join(fmt_dims(b) for b in sorted(sim_blocks))
                        + ", ncu " + " ".join(fmt_dims(b) for b in sorted(ncu_blocks)) + ")")
        pairs.append((sg, ng, how))
    ncu_only = []
    for key, launches in ncu_by_key.items():
        if key not in used:
            ng = _new_ncu_group(launches[0]["name"])
            for n in launches:
                _add_ncu(ng, n)
            ncu_only.append(ng)
    return pairs, ncu_only


def compare_metric(sim_group, ncu_group, columns, sim_key, ncu_keys, kind, per_launch):
    row = {"metric": sim_key, "ncu_metric": " + ".join(ncu_keys), "kind": kind}
    present = [k for k in ncu_keys if k in columns]
    sim_v = sim_group["metrics"].get(sim_key)
    ncu_v = None
    if present and any(k in ncu_group["seen"] for k in present):
        vals = [ncu_group["metrics"][k] for k in present if k in ncu_group["metrics"]]
        ncu_v = sum(vals) if vals else None
        minus = [k for k in MINUS.get(sim_key, ()) if k in ncu_group["metrics"]]
        if ncu_v is not None and minus:
            ncu_v -= sum(ncu_group["metrics"][k] for k in minus)
            row["ncu_metric"] += " - " + " - ".join(minus)
    if per_launch:
        if sim_v is not None:
            sim_v /= sim_group["launches"]
        if ncu_v is not None:
            ncu_v /= ncu_group["launches"]
    row["sim"], row["ncu"] = sim_v, ncu_v
    missing = [k for k in ncu_keys if k not in columns]
    if missing and present:
        row["note"] = "summed without " + ", ".join(missing) + " (n/a on this ncu)"
    if ncu_v is None:
        row["ratio"], row["verdict"] = None, "n/a on this ncu"
        return row
    if sim_v is None:
        row["ratio"], row["verdict"] = None, "not in sim"
        return row
    row["ratio"] = sim_v / ncu_v if ncu_v != 0 else None
    if kind == "modelled":
        row["verdict"] = "modelled"
    else:
        same = abs(sim_v - ncu_v) <= 1e-9 * max(1.0, abs(ncu_v))
        row["verdict"] = "exact" if same else "DIFFERS"
    return row


def compare(sim_path, ncu_path):
    header, sim_kernels = read_sim(sim_path)
    ncu_launches, columns, notes = read_ncu(ncu_path)
    pairs, ncu_only = pair_kernels(sim_kernels, ncu_launches)
    kernels, not_profiled = [], []
    summary = {"exact": 0, "DIFFERS": 0, "modelled": 0, "n/a on this ncu": 0, "not in sim": 0}
    for sg, ng, how in pairs:
        if ng is None:
            not_profiled.append({"name": sg["name"], "launches": sg["launches"], "rungs": sg["rungs"]})
            continue
        per_launch = sg["launches"] > 0 and ng["launches"] > 0 and sg["launches"] != ng["launches"]
        entry = {"name": sg["name"], "ncu_name": ng["name"], "matched_by": how, "rungs": sg["rungs"],
                 "block": [list(b) for b in sg["blocks"] or ng["blocks"]],
                 "grid": [list(g) for g in sg["grids"]],
                 "sim_launches": sg["launches"], "ncu_launches": ng["launches"],
                 "compared": "per launch" if per_launch else "sum over launches",
                 "sampled_blocks": sg["sampled"], "metrics": []}
        for sim_key, ncu_keys, kind in COMPARED:
            row = compare_metric(sg, ng, columns, sim_key, ncu_keys, kind, per_launch)
            summary[row["verdict"]] += 1
            entry["metrics"].append(row)
        entry["sim_only_metrics"] = {k: v for k, v in sorted(sg["metrics"].items()) if k not in COMPARED_SIM_KEYS}
        kernels.append(entry)
    return {
        "sim_file": sim_path, "ncu_file": ncu_path, **header,
        "ncu_units_row": notes["units_row"], "ncu_scaled_units": sorted(notes["scaled_units"]),
        "ncu_launches": len(ncu_launches), "ncu_metric_columns": sorted(columns),
        "kernels": kernels,
        "ncu_only": [{"name": g["name"], "launches": g["launches"]} for g in ncu_only],
        "not_profiled_by_ncu": not_profiled,
        "summary": summary,
    }


# ---------------------------------------------------------------------------------------------
# Output


def _launches(n):
    return f"{n} launch{'' if n == 1 else 'es'}"


def print_table(result, out=None):
    out = out or sys.stdout
    title = " ".join(str(result[k]) for k in ("op", "problem", "gpu") if result.get(k))
    print(f"simulator against ncu{': ' + title if title else ''}", file=out)
    print(f"  sim: {result['sim_file']}", file=out)
    print(f"  ncu: {result['ncu_file']} ({_launches(result['ncu_launches'])}, units row "
          f"{'present' if result['ncu_units_row'] else 'absent'})", file=out)
    if result["ncu_scaled_units"]:
        print("  warning: ncu scaled some units (" + "; ".join(result["ncu_scaled_units"])
              + "): rerun ncu with --print-units base for exact counts", file=out)
    width = max(len(sim) for sim, _, _ in COMPARED)
    for k in result["kernels"]:
        print(file=out)
        rungs = f" [{', '.join(k['rungs'])}]" if k["rungs"] else ""
        block = f" block {' '.join(fmt_dims(tuple(b)) for b in k['block'])}" if k["block"] else ""
        print(f"{k['name']}{rungs}{block}: launches sim {k['sim_launches']}, ncu {k['ncu_launches']}"
              f" ({k['compared']}; matched by {k['matched_by']})", file=out)
        if k["sampled_blocks"]:
            print(f"  the simulator ran a sample of the blocks (run/total {', '.join(k['sampled_blocks'])}): its counts "
                  "come from that sample, not from every block ncu saw", file=out)
        print(f"  {'metric':<{width}}  {'sim':>14}  {'ncu':>14}  {'sim/ncu':>8}  verdict", file=out)
        for m in k["metrics"]:
            ratio = "-" if m["ratio"] is None else f"{m['ratio']:.3f}"
            ncu = "n/a" if m["verdict"] == "n/a on this ncu" else fmt_value(m["ncu"])
            note = f"  ({m['note']})" if m.get("note") else ""
            print(f"  {m['metric']:<{width}}  {fmt_value(m['sim']):>14}  {ncu:>14}  {ratio:>8}  {m['verdict']}{note}",
                  file=out)
    if result["ncu_only"]:
        print(file=out)
        print("ncu profiled kernels the simulator did not report: "
              + ", ".join(f"{plain_name(g['name'])} ({_launches(g['launches'])})" for g in result["ncu_only"]), file=out)
    if result["not_profiled_by_ncu"]:
        print(file=out)
        print("simulator kernels ncu did not profile: "
              + ", ".join(f"{g['name']} ({_launches(g['launches'])})" for g in result["not_profiled_by_ncu"]), file=out)
    s = result["summary"]
    print(file=out)
    print(f"summary: {len(result['kernels'])} kernel(s) compared; {s['exact']} exact, {s['DIFFERS']} DIFFERS, "
          f"{s['modelled']} modelled, {s['n/a on this ncu']} n/a on this ncu, {s['not in sim']} not in sim", file=out)


def main(argv=None):
    ap = argparse.ArgumentParser(description="The simulator's ncu-named metrics against ncu's CSV.")
    ap.add_argument("sim", nargs="?", help="JSON from `kernelab sim profile ... --json` or `sim run --profile --json`")
    ap.add_argument("ncu", nargs="?", help="CSV from `ncu --csv --page raw --metrics ...`")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--metrics-list", action="store_true", help="print the comma-separated metrics to request from ncu")
    ap.add_argument("--available", metavar="FILE", help="with --metrics-list: `ncu --query-metrics` output to filter by")
    args = ap.parse_args(argv)
    try:
        if args.metrics_list:
            available = None
            if args.available:
                try:
                    available = read_available(args.available)
                except OSError:
                    available = None
                if available is not None and not metrics_list(available):
                    print(f"ncu_compare: {args.available} lists none of the metrics; requesting all of them",
                          file=sys.stderr)
                    available = None
            print(",".join(metrics_list(available)))
            return 0
        if not args.sim or not args.ncu:
            ap.error("give SIM.json and NCU.csv, or --metrics-list")
        result = compare(args.sim, args.ncu)
    except InputError as e:
        print(f"ncu_compare: {e}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
