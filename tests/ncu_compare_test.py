#!/usr/bin/env python3
"""scripts/ncu_compare.py on a synthetic simulator JSON and synthetic ncu CSVs (the format, not
real counts): units row present and absent, a metric column ncu lacks, two launches of one kernel
summed, names normalised (also in the form ncu wrote them on an H200), one kernel of two rungs
paired in launch order, a malformed input -> exit 2.  Run: python3 tests/ncu_compare_test.py"""
import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ left in scripts/
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "ncu_compare.py")
_spec = importlib.util.spec_from_file_location("ncu_compare", SCRIPT)
nc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nc)

LD_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
LD_SEC = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
ST_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
ST_SEC = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
ATOM_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum"
RED_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"
SH_LD = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
CONF_LD = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
LDGSTS_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum"
DRAM_RD = "dram__bytes_read.sum"

SIM = {
    "op": "transpose", "problem": "1024x1024", "gpu": "h200",
    "rungs": [
        {"variant": "cuda_naive", "config": "32x8_threads", "sampled_blocks": None,
         "kernels": [{"name": "transpose_naive<4>", "launches": 2, "grid": [32, 128, 1], "block": [32, 8, 1],
                      "metrics": {LD_REQ: 8192, LD_SEC: 32768, ST_REQ: 8192, ST_SEC: 262144, ATOM_REQ: 10,
                                  SH_LD: 0, CONF_LD: 0, LDGSTS_REQ: 0, "model__dram_bytes_read.sum": 8388608,
                                  "sim__active_lanes.sum": 123}}]},
        {"variant": "cuda_smem", "config": "32x8_threads", "sampled_blocks": {"run": 64, "total": 1024},
         "kernels": [{"name": "transpose_tile<Plain, 8>", "launches": 1, "grid": [32, 32, 1], "block": [32, 8, 1],
                      "metrics": {LD_REQ: 4096, SH_LD: 5000}}]},
    ],
}

HEADER = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
          "Grid Size", "Device", "CC", LD_REQ, LD_SEC, ST_REQ, ST_SEC, ATOM_REQ, RED_REQ, SH_LD, CONF_LD, DRAM_RD]
UNITS = [""] * 11 + ["request", "sector", "request", "sector", "request", "request", "", "", "byte"]
NAIVE = "void kl::cuda::(anonymous namespace)::transpose_naive<4>(float *, const float *, int, int)"
TILE = "void kl::cuda::(anonymous namespace)::transpose_tile<kl::cuda::(anonymous namespace)::Plain, (int)8>(float *, const float *, int, int)"


def launch(ident, name, values):
    return [str(ident), "4242", "kernelab", "127.0.0.1", name, "1", "7", "(32, 8, 1)", "(32, 128, 1)", "0", "9.0"] + values


# Two launches of transpose_naive whose sums are the simulator's (thousands separators in one),
# except the store sectors (sim 262144, ncu 2 x 131,000). One launch of the tile kernel and one of a
# kernel the simulator never saw.
ROWS = [
    launch(0, NAIVE, ["4,096", "16,384", "4096", "131,072", "4", "1", "0", "0", "4,194,304"]),
    launch(1, NAIVE, ["4096", "16384", "4096", "131,000", "4", "1", "0", "0", "4194304"]),
    launch(2, TILE, ["4,096", "4,096", "4096", "4096", "0", "0", "5,000", "4,000", "4194304"]),
    launch(3, "void kl::cuda::hold_stream(volatile int *, volatile int *, long long)", ["0"] * 9),
]


def csv_text(header, rows, units=None, noise=True):
    def line(cells):
        return ",".join('"' + c.replace('"', '""') + '"' for c in cells)
    lines = []
    if noise:  # what ncu and the profiled program print around the CSV
        lines += ["==PROF== Connected to process 4242 (/w/build/kernelab)",
                  "variant  config  launched", "cuda_naive  32x8_threads  transpose_naive<4>, x<1>",
                  '==PROF== Profiling "transpose_naive": 0%....50%....100% - 9 passes']
    lines.append(line(header))
    if units is not None:
        lines.append(line(units))
    lines += [line(r) for r in rows]
    if noise:
        lines.append("==PROF== Disconnected from process 4242")
    return "\n".join(lines) + "\n"


def drop_column(name):
    i = HEADER.index(name)
    cut = lambda r: r[:i] + r[i + 1:]  # noqa: E731
    return cut(HEADER), cut(UNITS), [cut(r) for r in ROWS]


class NcuCompareTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.sim = self.write("sim.json", json.dumps(SIM))

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_main(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = nc.main(list(argv))
        return rc, out.getvalue(), err.getvalue()

    def compare(self, csv):
        rc, out, err = self.run_main(self.sim, self.write("ncu.csv", csv), "--json")
        self.assertEqual(rc, 0, err)
        return json.loads(out)

    @staticmethod
    def metric(result, kernel, key):
        k = next(k for k in result["kernels"] if k["name"] == kernel)
        return next(m for m in k["metrics"] if m["metric"] == key)

    def check_counts(self, r):
        naive = next(k for k in r["kernels"] if k["name"] == "transpose_naive<4>")
        self.assertEqual((naive["sim_launches"], naive["ncu_launches"]), (2, 2))
        self.assertEqual(naive["compared"], "sum over launches")
        self.assertEqual(naive["rungs"], ["cuda_naive 32x8_threads"])
        m = self.metric(r, "transpose_naive<4>", LD_REQ)
        self.assertEqual((m["sim"], m["ncu"], m["ratio"], m["verdict"]), (8192, 8192, 1.0, "exact"))
        self.assertEqual(self.metric(r, "transpose_naive<4>", LD_SEC)["verdict"], "exact")
        st = self.metric(r, "transpose_naive<4>", ST_SEC)
        self.assertEqual((st["ncu"], st["verdict"]), (262072, "DIFFERS"))
        atom = self.metric(r, "transpose_naive<4>", ATOM_REQ)  # sim atom = ncu atom + red
        self.assertEqual((atom["ncu"], atom["verdict"]), (10, "exact"))
        dram = self.metric(r, "transpose_naive<4>", "model__dram_bytes_read.sum")
        self.assertEqual((dram["ncu"], dram["ratio"], dram["verdict"]), (8388608, 1.0, "modelled"))
        self.assertEqual(naive["sim_only_metrics"], {"sim__active_lanes.sum": 123})
        # Template arguments with namespaces and casts normalised on the ncu side.
        tile = next(k for k in r["kernels"] if k["name"] == "transpose_tile<Plain, 8>")
        self.assertEqual(tile["matched_by"], "name")  # "(int)8" and namespaces in ncu's name normalised away
        self.assertEqual(tile["sampled_blocks"], ["64/1024"])
        self.assertEqual(self.metric(r, "transpose_tile<Plain, 8>", SH_LD)["verdict"], "exact")
        self.assertEqual(self.metric(r, "transpose_tile<Plain, 8>", ST_REQ)["verdict"], "not in sim")
        self.assertEqual([g["name"] for g in r["ncu_only"]], ["void kl::cuda::hold_stream(volatile int *, volatile int *, long long)"])

    def test_units_row_present(self):
        r = self.compare(csv_text(HEADER, ROWS, UNITS))
        self.assertTrue(r["ncu_units_row"])
        self.assertEqual(r["ncu_launches"], 4)
        self.check_counts(r)

    def test_units_row_absent_no_noise(self):
        r = self.compare(csv_text(HEADER, ROWS, None, noise=False))
        self.assertFalse(r["ncu_units_row"])
        self.check_counts(r)

    def test_metric_ncu_lacks(self):
        header, units, rows = drop_column(RED_REQ)
        r = self.compare(csv_text(header, rows, units))
        atom = self.metric(r, "transpose_naive<4>", ATOM_REQ)
        self.assertEqual((atom["ncu"], atom["verdict"]), (8, "DIFFERS"))
        self.assertIn("n/a on this ncu", atom["note"])
        ldgsts = self.metric(r, "transpose_naive<4>", LDGSTS_REQ)  # no column at all in these CSVs
        self.assertEqual((ldgsts["ncu"], ldgsts["verdict"]), (None, "n/a on this ncu"))
        rc, out, _ = self.run_main(self.sim, self.write("ncu.csv", csv_text(header, rows, units)))
        self.assertEqual(rc, 0)
        self.assertRegex(out, r"l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts\.sum +0 +n/a +- +n/a on this ncu")
        self.assertIn("DIFFERS", out)
        self.assertIn("ncu profiled kernels the simulator did not report: hold_stream (1 launch)", out)

    def test_scaled_units_converted_and_flagged(self):
        units = list(UNITS)
        units[HEADER.index(DRAM_RD)] = "Mbyte"
        rows = [r[:-1] + ["4.194304"] for r in ROWS]
        r = self.compare(csv_text(HEADER, rows, units))
        self.assertEqual(self.metric(r, "transpose_naive<4>", "model__dram_bytes_read.sum")["ncu"], 8388608)
        self.assertEqual(r["ncu_scaled_units"], [DRAM_RD + " in Mbyte"])

    def test_launch_counts_differ_compared_per_launch(self):
        r = self.compare(csv_text(HEADER, ROWS[:1] + ROWS[2:], UNITS))
        naive = next(k for k in r["kernels"] if k["name"] == "transpose_naive<4>")
        self.assertEqual((naive["sim_launches"], naive["ncu_launches"], naive["compared"]), (2, 1, "per launch"))
        m = self.metric(r, "transpose_naive<4>", LD_REQ)
        self.assertEqual((m["sim"], m["ncu"], m["verdict"]), (4096, 4096, "exact"))

    def test_sim_run_profile_shape_and_details_page(self):
        sim = self.write("run.json", json.dumps({"kernels": [SIM["rungs"][0]["kernels"][0]]}))
        long_header = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Block Size", "Grid Size",
                       "Section Name", "Metric Name", "Metric Unit", "Metric Value"]
        rows = [[str(i), "1", "a", "h", NAIVE, "(32, 8, 1)", "(32, 128, 1)", "Command line profiler metrics", LD_REQ,
                 "request", "4,096"] for i in (0, 1)]
        rc, out, err = self.run_main(sim, self.write("long.csv", csv_text(long_header, rows)), "--json")
        self.assertEqual(rc, 0, err)
        m = self.metric(json.loads(out), "transpose_naive<4>", LD_REQ)
        self.assertEqual((m["sim"], m["ncu"], m["verdict"]), (8192, 8192, "exact"))

    def test_two_configs_of_one_kernel_kept_apart_by_block(self):
        sim = json.loads(json.dumps(SIM))
        sim["rungs"].append({"variant": "cuda_smem", "config": "32x4_threads", "sampled_blocks": None,
                             "kernels": [{"name": "transpose_tile<Plain, 8>", "launches": 1, "block": [32, 4, 1],
                                          "metrics": {SH_LD: 7000}}]})
        row = launch(9, TILE, ["0", "0", "0", "0", "0", "0", "7,000", "0", "0"])
        row[7] = "(32, 4, 1)"
        rc, out, err = self.run_main(self.write("sim2.json", json.dumps(sim)),
                                     self.write("ncu.csv", csv_text(HEADER, ROWS + [row], UNITS)), "--json")
        self.assertEqual(rc, 0, err)
        tiles = [k for k in json.loads(out)["kernels"] if k["name"] == "transpose_tile<Plain, 8>"]
        # ncu launched them in the simulator's order: paired in launch order, in the simulator's order.
        self.assertEqual([k["block"] for k in tiles], [[[32, 8, 1]], [[32, 4, 1]]])
        self.assertEqual([k["metrics"][6]["ncu"] for k in tiles], [5000, 7000])
        self.assertEqual({k["metrics"][6]["verdict"] for k in tiles}, {"exact"})
        self.assertEqual([k["matched_by"] for k in tiles],
                         ["name, 1 of 2 in launch order", "name, 2 of 2 in launch order"])
        # ncu launched them the other way round: the launch order pairs different block sizes, so the
        # launches are kept apart by block size instead (sorted by block).
        rows = ROWS[:2] + [row, ROWS[2], ROWS[3]]
        rc, out, err = self.run_main(self.write("sim2.json", json.dumps(sim)),
                                     self.write("ncu.csv", csv_text(HEADER, rows, UNITS)), "--json")
        self.assertEqual(rc, 0, err)
        tiles = [k for k in json.loads(out)["kernels"] if k["name"] == "transpose_tile<Plain, 8>"]
        self.assertEqual([k["block"] for k in tiles], [[[32, 4, 1]], [[32, 8, 1]]])
        self.assertEqual([k["metrics"][6]["ncu"] for k in tiles], [7000, 5000])
        self.assertEqual({k["metrics"][6]["verdict"] for k in tiles}, {"exact"})

    def test_ncu_names_as_ncu_prints_them_on_h200(self):
        """Names in the form ncu 2025 wrote on an H200 ("unnamed>::" for the anonymous namespace, also
        inside template arguments; bools as 0/1; "Bits<T1>::T" in the parameters; no "void" for a
        non-template kernel), and one kernel launched by two rungs, paired in launch order."""
        def kernel(name, ld_req, block=(256, 1, 1)):
            return {"name": name, "launches": 1, "block": list(block), "metrics": {LD_REQ: ld_req}}
        sim = {"op": "mixed", "rungs": [{"variant": v, "config": "c", "kernels": [k]} for v, k in [
            ("naive", kernel("transpose_naive<4>", 100, (32, 8, 1))),
            ("smem", kernel("through_tile<4, Plain, 8>", 200, (32, 8, 1))),
            ("divergent", kernel("path_chains<false>", 300)),
            ("uniform", kernel("path_chains<true>", 400)),
            ("banks", kernel("bank_sweep", 500)),
            ("stride", kernel("strided_copy<1>", 600)),
            ("norm", kernel("norm_welford<float, true, 256>", 700)),
            ("vectorized", kernel("reduce_rows_warp_vec<float, Sum>", 800)),
            ("one_pass", kernel("reduce_rows_warp_vec<float, Sum>", 900)),
        ]]}
        names = [
            ("void unnamed>::transpose_naive<4>(const Bits<T1>::T *, Bits<T1>::T *, int, int)", 100, "(32, 8, 1)"),
            ("void transpose_tile::through_tile<4, unnamed>::Plain, 8>(const Bits<T1>::T *, Bits<T1>::T *, int, int)",
             200, "(32, 8, 1)"),
            ("void unnamed>::path_chains<0>(const float *, const float *, const float *, float *, int, int, int)", 300,
             "(256, 1, 1)"),
            ("void unnamed>::path_chains<1>(const float *, const float *, const float *, float *, int, int, int)", 400,
             "(256, 1, 1)"),
            ("unnamed>::bank_sweep(const float *, float *, int, int)", 500, "(256, 1, 1)"),
            ("void unnamed>::strided_copy<1>(const unnamed>::Unit<T1>::T *, unnamed>::Unit<T1>::T *, long, long)",
             600, "(256, 1, 1)"),
            ("void unnamed>::norm_welford<float, 1, 256>(norm::Tensors<T1>)", 700, "(256, 1, 1)"),
            ("void unnamed>::reduce_rows_warp_vec<float, Sum>(const T1 *, float *, long, long)", 800, "(256, 1, 1)"),
            ("void unnamed>::reduce_rows_warp_vec<float, Sum>(const T1 *, float *, long, long)", 901, "(256, 1, 1)"),
        ]
        rows = []
        for i, (name, ld, block) in enumerate(names):
            row = launch(i, name, [str(ld)] + ["0"] * 8)
            row[7] = block
            rows.append(row)
        rc, out, err = self.run_main(self.write("mixed.json", json.dumps(sim)),
                                     self.write("ncu.csv", csv_text(HEADER, rows, UNITS)), "--json")
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        self.assertEqual((r["ncu_only"], r["not_profiled_by_ncu"]), ([], []))
        got = [(k["name"], k["rungs"], k["matched_by"], k["metrics"][0]["sim"], k["metrics"][0]["ncu"],
                k["metrics"][0]["verdict"]) for k in r["kernels"]]
        self.assertEqual(got, [
            ("transpose_naive<4>", ["naive c"], "name", 100, 100, "exact"),
            ("through_tile<4, Plain, 8>", ["smem c"], "name", 200, 200, "exact"),
            ("path_chains<false>", ["divergent c"], "name", 300, 300, "exact"),
            ("path_chains<true>", ["uniform c"], "name", 400, 400, "exact"),
            ("bank_sweep", ["banks c"], "name", 500, 500, "exact"),
            ("strided_copy<1>", ["stride c"], "name", 600, 600, "exact"),
            ("norm_welford<float, true, 256>", ["norm c"], "name", 700, 700, "exact"),
            ("reduce_rows_warp_vec<float, Sum>", ["vectorized c"], "name, 1 of 2 in launch order", 800, 800, "exact"),
            ("reduce_rows_warp_vec<float, Sum>", ["one_pass c"], "name, 2 of 2 in launch order", 900, 901, "DIFFERS"),
        ])
        self.assertEqual(r["summary"]["DIFFERS"], 1)

    def test_ncu_names_without_template_arguments(self):
        rows = [r[:4] + [r[4].split("<")[0].replace("void ", "")] + r[5:] for r in ROWS]  # --print-kernel-base function
        r = self.compare(csv_text(HEADER, rows, UNITS))
        naive = next(k for k in r["kernels"] if k["name"] == "transpose_naive<4>")
        self.assertEqual((naive["matched_by"], naive["ncu_launches"]), ("function name only", 2))

    def test_hfma2_taken_out_of_the_tensor_pipe_count(self):
        hmma, hfma2 = "sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum"
        self.assertIn(hfma2, nc.metrics_list())
        sim = {"op": "softmax", "problem": "p", "gpu": "h200", "rungs": [{"variant": "v", "config": "c", "sampled_blocks": None,
               "kernels": [{"name": "transpose_naive<4>", "launches": 1, "grid": [32, 128, 1], "block": [32, 8, 1],
                            "metrics": {hmma: 0}}]}]}
        sim_path = self.write("hfma2.sim.json", json.dumps(sim))
        for counts, ncu_value, verdict in (((10, 10), 0, "exact"), ((10, 6), 4, "DIFFERS")):
            csv = csv_text(HEADER[:11] + [hmma, hfma2], [launch(1, NAIVE, [str(c) for c in counts])], noise=False)
            rc, out, err = self.run_main(sim_path, self.write("hfma2.csv", csv), "--json")
            self.assertEqual(rc, 0, err)
            m = self.metric(json.loads(out), "transpose_naive<4>", hmma)
            self.assertEqual((m["ncu"], m["verdict"]), (ncu_value, verdict))
            self.assertIn("- " + hfma2, m["ncu_metric"])

    def test_names(self):
        self.assertEqual(nc.plain_name(NAIVE), "transpose_naive<4>")
        self.assertEqual(nc.plain_name("kl::sim_ops::{anonymous}::softmax_warp<float, 4u, 8>"), "softmax_warp<float, 4, 8>")
        self.assertEqual(nc.plain_name("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn")
        self.assertEqual(nc.match_key("f<float *, 2>"), nc.match_key("void ns::f<float*,2>(int)"))
        # The anonymous namespace as ncu's CSV writes it ("unnamed>::", the "<" lost) and in full.
        self.assertEqual(nc.plain_name("void unnamed>::transpose_naive<4>(const Bits<T1>::T *, Bits<T1>::T *, int, int)"),
                         "transpose_naive<4>")
        self.assertEqual(nc.plain_name("void transpose_tile::through_tile<4, unnamed>::Plain, 8>(const Bits<T1>::T *)"),
                         "through_tile<4, Plain, 8>")
        self.assertEqual(nc.plain_name("void f<unnamed>::X, 2>(int)"), "f<X, 2>")
        self.assertEqual(nc.plain_name("void <unnamed>::f<<unnamed>::X>(int)"), "f<X>")
        self.assertEqual(nc.plain_name("anonymous namespace::bank_sweep(const float *, float *, int, int)"), "bank_sweep")
        self.assertEqual(nc.match_key("row_stats<float, true>"), nc.match_key("void unnamed>::row_stats<float, 1>(int)"))
        self.assertEqual(nc.match_key("path_chains<false>"), nc.match_key("path_chains<(bool)0>"))
        self.assertEqual(nc.parse_number("1,234,567"), 1234567)
        self.assertEqual(nc.parse_number("27.595.520"), 27595520)
        self.assertIsNone(nc.parse_number("n/a"))
        self.assertEqual(nc.parse_dims("(1,024, 1, 1)"), (1024, 1, 1))

    def test_metrics_list(self):
        rc, out, _ = self.run_main("--metrics-list")
        self.assertEqual(rc, 0)
        wanted = out.strip().split(",")
        for key in (LD_REQ, ATOM_REQ, RED_REQ, "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum", DRAM_RD,
                    "dram__bytes_write.sum", "sm__inst_executed_pipe_tensor_op_hmma.sum", "smsp__inst_executed_op_ldsm.sum"):
            self.assertIn(key, wanted)
        self.assertEqual(len(wanted), len(set(wanted)))
        self.assertFalse(any(k.startswith(("model__", "sim__")) for k in wanted))
        query = self.write("query.txt", "Device NVIDIA H200 (GH100)\nMetric Name   Metric Description\n"
                                        "dram__bytes_read   # of bytes read from DRAM\n"
                                        "l1tex__t_requests_pipe_lsu_mem_global_op_ld   # of requests\n")
        rc, out, _ = self.run_main("--metrics-list", "--available", query)
        self.assertEqual(out.strip(), LD_REQ + "," + DRAM_RD)

    def test_malformed_inputs_exit_2(self):
        good_csv = self.write("ncu.csv", csv_text(HEADER, ROWS, UNITS))
        cases = [
            (self.write("bad.json", "{not json"), good_csv, "not JSON"),
            (self.write("shape.json", '{"rows": 1}'), good_csv, "'rungs' list"),
            (self.write("cases.json", '{"op": "softmax", "cases": [{"rungs": []}]}'), good_csv, "with the shape ncu ran"),
            (self.write("nometrics.json", '{"kernels": [{"name": "k"}]}'), good_csv, "no 'metrics'"),
            (self.sim, self.write("noheader.csv", "==PROF== Connected\n==ERROR== Failed to find metric x.sum\n"),
             "Failed to find metric"),
            (self.sim, os.path.join(self.tmp.name, "absent.csv"), "cannot read"),
        ]
        for sim, csv, message in cases:
            rc, out, err = self.run_main(sim, csv)
            self.assertEqual(rc, 2, (sim, csv))
            self.assertIn(message, err)
        # And as a process, as device-check.sh runs it.
        p = subprocess.run([sys.executable, SCRIPT, cases[0][0], good_csv], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("ncu_compare:", p.stderr)


if __name__ == "__main__":
    unittest.main()
