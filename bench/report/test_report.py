#!/usr/bin/env python3
"""Tests of the document generator: what it refuses (a typed figure, a run without provenance, an ambiguous row),
what it judges (a bar's class rule, a shaped link's burst), and that the committed document is current."""
import copy
import json
import os
import statistics
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bars  # noqa: E402
import generate  # noqa: E402
import tables  # noqa: E402
from results import ReportError, Run, _check_meta, load_runs  # noqa: E402

META = {"command": "braid bench -b 1M -e 64M -n 10", "commit": "0123456789ab", "date": "2026-12-02T10:00:00Z",
        "machine": {"cpu": "Xeon", "cores": 16, "gpus": [], "link": "shared memory"},
        "peers": {"gloo": "0.0~git20220518"}}


def row(impl, nbytes, time_us, busbw, **kw):
    r = {"impl": impl, "bytes": nbytes, "time_us": time_us, "busbw_gbs": busbw, "algbw_gbs": busbw,
         "collective": "allreduce", "dtype": "float32", "wrong": 0}
    r.update(kw)
    return r


class Lint(unittest.TestCase):
    def test_a_typed_figure_is_refused(self):
        for text in ("braid is 1.5x Gloo", "it takes 12.3 us", "95% of the link", "at 1.2 GB/s", "3 ms per step"):
            self.assertTrue(generate.lint(text + "\n"), text)

    def test_setup_predictions_code_and_expressions_pass(self):
        ok = ("64 MiB at 10 Gbit/s on 2 ranks\n> Prediction (before the run): 1.5x\n```\n-n 20 1.5x\n```\n"
              "braid is {{ x(1.5) }} Gloo\n")
        self.assertEqual(generate.lint(ok), [])


class Provenance(unittest.TestCase):
    def test_complete_meta_passes(self):
        _check_meta("cpu-x", META, [row("braid", 8, 1, 0), row("gloo", 8, 2, 0)])

    def test_each_missing_field_is_named(self):
        for field in ("command", "commit", "date", "machine", "peers"):
            meta = copy.deepcopy(META)
            del meta[field]
            with self.assertRaisesRegex(ReportError, field):
                _check_meta("cpu-x", meta, [row("braid", 8, 1, 0)])

    def test_a_peer_without_version_is_refused(self):
        with self.assertRaisesRegex(ReportError, "mpi"):
            _check_meta("cpu-x", META, [row("braid", 8, 1, 0), row("mpi", 8, 2, 0)])

    def test_a_dirty_tree_must_list_its_files(self):
        meta = dict(META, commit="0123456789ab-dirty")
        with self.assertRaisesRegex(ReportError, "dirty_files"):
            _check_meta("cpu-x", meta, [row("braid", 8, 1, 0)])

    def test_machine_needs_cores_and_link(self):
        meta = dict(META, machine={"cpu": "Xeon", "cores": 0, "gpus": [], "link": "x"})
        with self.assertRaisesRegex(ReportError, "machine"):
            _check_meta("cpu-x", meta, [row("braid", 8, 1, 0)])

    def test_files_are_named_for_the_run(self):
        with self.assertRaisesRegex(ReportError, "named"):
            _check_meta("netns-2x1-session11", META, [row("braid", 8, 1, 0)])


class Lookups(unittest.TestCase):
    def test_ambiguous_or_missing_rows_fail(self):
        run = Run("x", META, [row("braid", 8, 1, 0), row("braid", 8, 2, 0)])
        with self.assertRaisesRegex(ReportError, "2 rows"):
            run.row("braid", 8)
        with self.assertRaisesRegex(ReportError, "0 rows"):
            run.row("gloo", 8)

    def test_a_wrong_row_is_never_shown(self):
        run = Run("x", META, [row("braid", 8, 1, 0, wrong=3)])
        with self.assertRaisesRegex(ReportError, "wrong"):
            run.row("braid", 8)

    def test_ratios_come_from_one_run(self):
        run = Run("x", META, [row("braid", 16 << 20, 100, 4.0), row("gloo", 16 << 20, 400, 1.0)])
        self.assertAlmostEqual(tables.speedup(run, "16M", "gloo"), 4.0)
        self.assertEqual(tables.x(tables.speedup(run, "16M", "gloo")), "4.00x")


class Targets(unittest.TestCase):
    def run_of(self, gloo=True):
        rows = [row("braid", 8, 1.0, 0), row("mpi", 8, 2.0, 0), row("braid", 1 << 20, 10.0, 0),
                row("mpi", 1 << 20, 9.0, 0)]
        if gloo:
            rows += [row("gloo", 8, 50.0, 0), row("gloo", 1 << 20, 40.0, 0)]
        return Run("x", META, rows)

    def test_the_worst_sizes_against_each_peer(self):
        text = tables.targets([("2", self.run_of())])
        self.assertIn("| 2 | 1.34x | 0.90x at 1 MiB | 1 MiB | 4.00x at 1 MiB |", text)

    def test_without_a_bulk_peer_its_column_is_left_out(self):
        text = tables.targets([("2", self.run_of(gloo=False))], bulk_peer=None)
        self.assertIn("| 2 | 1.34x | 0.90x at 1 MiB | 1 MiB |", text)
        self.assertNotIn("Gloo", text)
        with self.assertRaises(ReportError):
            tables.targets([("2", self.run_of(gloo=False))])


class SettingSweep(unittest.TestCase):
    def test_each_pass_pairs_its_own_runs_and_the_mean_spans_them(self):
        def run(name, t8, t64):
            return Run(name, META, [row("braid", 8, t8, 0), row("braid", 64, t64, 0)])
        base = [run("a1", 10, 40), run("a2", 20, 80)]
        big = [run("b1", 5, 20), run("b2", 20, 80)]  # twice as fast in the first pass, the same in the second
        text = tables.setting_sweep([("2", {"256K": base, "1M": big})], "256K", ["1M"])
        self.assertIn("| 2 | 1.41x (1.00-2.00x) |", text)

    def test_unequal_passes_are_refused(self):
        one = [Run("a", META, [row("braid", 8, 1, 0)])]
        with self.assertRaisesRegex(ReportError, "passes"):
            tables.setting_sweep([("2", {"256K": one, "1M": one + one})], "256K", ["1M"])


class SettingBySize(unittest.TestCase):
    def test_each_size_is_the_median_of_its_passes_own_ratios(self):
        def run(name, t8, t64):
            return Run(name, META, [row("braid", 8, t8, 0), row("braid", 64, t64, 0)])
        base = [run("a1", 10, 40), run("a2", 20, 80), run("a3", 30, 90)]
        auto = [run("b1", 5, 40), run("b2", 5, 40), run("b3", 10, 30)]  # at 8 B 2x, 4x, 3x; at 64 B 1x, 2x, 3x
        text = tables.setting_by_size([("2", {"1": base, "auto": auto})], "1", "auto")
        self.assertIn("| 8 B | 3.00x (2.00-4.00x) |", text)
        self.assertIn("| 64 B | 2.00x (1.00-3.00x) |", text)

    def test_unequal_passes_are_refused(self):
        one = [Run("a", META, [row("braid", 8, 1, 0)])]
        with self.assertRaisesRegex(ReportError, "passes"):
            tables.setting_by_size([("2", {"1": one, "auto": one + one})], "1", "auto")


class DdpSteps(unittest.TestCase):
    @staticmethod
    def step(impl, variant, passes, wrong=0):
        return dict(impl=impl, variant=variant, collective="ddp_step", dtype="float32", bytes=4096, count=1024,
                    time_us=statistics.median(passes) * 1e3, passes_ms=passes, wrong=wrong)

    def test_each_setting_against_the_base_pass_by_pass(self):
        run = Run("d", META, [self.step("gloo", "", [100.0, 120.0]), self.step("braid", "", [50.0, 90.0]),
                              self.step("braid", "BRAID_SHM_THREADS=1", [80.0, 60.0])])
        text = tables.ddp_steps([("2 ranks", run)])
        self.assertIn("| 2 ranks | gloo | 110.0 | 100.0, 120.0 | - |", text)
        self.assertIn("| 2 ranks | braid | 70.0 | 50.0, 90.0 | 0.62x (0.50-0.75x) |", text)
        self.assertIn("| 2 ranks | braid, BRAID_SHM_THREADS=1 | 70.0 | 80.0, 60.0 | 0.65x (0.50-0.80x) |", text)

    def test_pass_ratios_pair_the_runs_of_each_pass(self):
        run = Run("d", META, [self.step("gloo", "", [100.0, 120.0]), self.step("braid", "X=1", [50.0, 90.0])])
        self.assertEqual(tables.ddp_pass_ratios(run, ("braid", "X=1"), ("gloo", "")), [0.5, 0.75])

    def test_a_missing_base_or_differing_replicas_are_refused(self):
        with self.assertRaisesRegex(ReportError, "0 ddp_step rows for gloo"):
            tables.ddp_steps([("2", Run("d", META, [self.step("braid", "", [1.0])]))])
        bad = Run("d", META, [self.step("gloo", "", [1.0]), self.step("braid", "", [1.0], wrong=3)])
        with self.assertRaisesRegex(ReportError, "3 parameters differ"):
            tables.ddp_steps([("2", bad)])


class Placement(unittest.TestCase):
    def test_the_meta_block_says_how_each_library_was_placed(self):
        meta = dict(META, bind={"braid": "core", "gloo": "none", "mpi": "core"})
        text = generate.meta_block(Run("p", meta, [row("braid", 8, 1.0, 1)]))
        self.assertIn("- Placement: braid a core a rank, gloo floating, mpi a core a rank", text)
        text = generate.meta_block(Run("q", dict(META, bind="core"), [row("braid", 8, 1.0, 1)]))
        self.assertIn("- Placement: every library a core a rank", text)
        self.assertNotIn("Placement", generate.meta_block(Run("r", META, [row("braid", 8, 1.0, 1)])))


class InTurn(unittest.TestCase):
    def test_medians_of_the_passes_beside_the_median_ratio_to_the_peer(self):
        def run(name, braid_us, mpi_us):
            return Run(name, META, [row("braid", 64, braid_us, 0), row("mpi", 64, mpi_us, 0)])
        before = [run("b1", 1.0, 1.0), run("b2", 3.0, 2.0), run("b3", 2.0, 4.0)]
        after = [run("a1", 0.5, 1.0), run("a2", 0.9, 1.0), run("a3", 0.7, 2.0)]
        text = tables.in_turn([("before", before), ("after", after)], ["64"])
        self.assertIn("| 64 B | 2.00 | 1.00x | 0.70 | 0.50x |", text)
        self.assertIn("| size | before: us, median of 3 | before: time / Open MPI, median |", text)

    def test_unequal_passes_are_refused(self):
        one = [Run("a", META, [row("braid", 8, 1, 0), row("mpi", 8, 1, 0)])]
        with self.assertRaisesRegex(ReportError, "unequal passes"):
            tables.in_turn([("before", one), ("after", one + one)], ["8"])


class PassPairs(unittest.TestCase):
    def test_the_control_sizes_take_the_drift_out(self):
        def run(name, t8, t64):
            return Run(name, META, [row("braid", 8, t8, 0), row("braid", 64, t64, 0)])
        # Pass 1: the second run drifted 2x slower everywhere, yet 64 B gained; pass 2: no drift, 64 B 1.5x faster.
        pairs = [(run("b1", 1.0, 2.0), run("a1", 2.0, 2.0)), (run("b2", 1.0, 3.0), run("a2", 1.0, 2.0))]
        text = tables.pass_pairs(pairs, ["8"], ["64"])
        self.assertIn("| 1 | 0.50x | 1.00x | 2.00x |", text)
        self.assertIn("| 2 | 1.00x | 1.50x | 1.50x |", text)
        self.assertIn("| median | 0.75x | 1.25x | 1.75x |", text)


class Switches(unittest.TestCase):
    def test_each_cell_holds_the_time_and_the_involuntary_switches(self):
        slow = row("braid", 8, 10.0, 1)
        slow["involuntary_switches_per_call"] = 0.42
        fast = row("braid", 8, 1.5, 1)
        fast["involuntary_switches_per_call"] = 0.0
        text = tables.switches([("floating", Run("f", META, [slow])), ("bound", Run("b", META, [fast]))], ["8"])
        self.assertIn("| 8 B | 10.00 (0.42) | 1.50 (0.00) |", text)

    def test_a_row_without_the_counts_is_refused(self):
        with self.assertRaisesRegex(ReportError, "involuntary"):
            tables.switches([("old", Run("o", META, [row("braid", 8, 1, 1.0)]))], ["8"])


class ShapedLink(unittest.TestCase):
    def run_at(self, nbytes, busbw, impl="braid"):
        time_us = nbytes / busbw / 1e3
        return Run("netns-2x1-10gbit-test", META, [row(impl, nbytes, time_us, busbw)])

    def test_a_loop_inside_a_few_bursts_is_not_trusted(self):
        # 10 Gbit/s: a bucket of 5 MB; 10 calls of 1 MiB move 10 MB, two buckets.
        run = self.run_at(1 << 20, 1.2)
        self.assertFalse(tables.trusted(run, run.rows[0]))

    def test_a_large_loop_below_the_rate_is_trusted(self):
        run = self.run_at(64 << 20, 1.15)
        self.assertTrue(tables.trusted(run, run.rows[0]))

    def test_above_the_rate_is_never_trusted(self):
        run = self.run_at(64 << 20, 1.4)
        self.assertFalse(tables.trusted(run, run.rows[0]))

    def test_a_bar_counts_no_untrusted_size(self):
        rows = [row("braid", 4 << 20, (4 << 20) / 1.24e3, 1.24), row("braid", 64 << 20, (64 << 20) / 1.0e3, 1.0)]
        run = Run("netns-2x1-10gbit-test", META, rows)
        ratios = bars.Check("link", "1M", "1G", ">=", 0.9).ratios(run, "allreduce", None)
        self.assertEqual(list(ratios), [64 << 20])


class Bars(unittest.TestCase):
    def runs(self, ratios):
        rows = []
        for nbytes, r in ratios.items():
            rows += [row("braid", nbytes, 100 / r, r, dtype="float32"), row("nccl", nbytes, 100, 1.0, dtype="float32")]
        run = Run("nvlink-test", dict(META, peers={"nccl": "2.28"}), rows)
        run.order = 0
        return {"nvlink-test": run}

    def judge(self, ratios, rule):
        bar = bars.Bar("t", "t", r"nvlink-.*", [bars.Check("busbw", "256K", "8M", ">=", 1.5, "nccl",
                                                            dtypes=("float32",))], rule=rule)
        return bar.judge(self.runs(ratios))[1]

    def test_class_rule_takes_the_geometric_mean_and_a_floor(self):
        self.assertEqual(self.judge({1 << 20: 1.4, 2 << 20: 1.7}, "class"), "met")
        self.assertEqual(self.judge({1 << 20: 1.2, 2 << 20: 2.2}, "class"), "missed")  # 1.2 < 0.85 x 1.5
        self.assertEqual(self.judge({1 << 20: 1.3, 2 << 20: 1.5}, "class"), "missed")  # mean 1.40

    def test_every_size_rule(self):
        self.assertEqual(self.judge({1 << 20: 1.4, 2 << 20: 1.7}, "every size"), "missed")
        self.assertEqual(self.judge({1 << 20: 1.5, 2 << 20: 1.7}, "every size"), "met")

    def test_a_time_ratio_on_a_shaped_link_counts_every_size(self):
        # A few bursts carry 8 B calls on both sides alike: a time ratio stands where a bandwidth one would not.
        rows = [row("braid", 8, 30, 0.0), row("nccl", 8, 4500, 0.0)]
        run = Run("netns-device-2x1-10gbit-test", dict(META, peers={"nccl": "2.28"}), rows)
        self.assertAlmostEqual(bars.Check("time", "8", "64K", "<=", 0.5, "nccl").ratios(run, "allreduce", None)[8],
                               30 / 4500)
        self.assertEqual(bars.Check("busbw", "8", "64K", ">=", 1, "nccl").ratios(run, "allreduce", None), {})

    def test_absolute_bounds_read_braids_own_rows(self):
        rows = [row("braid", 8, 17.5, 0.0, variant="processes", issue_us=5.0, empty_launch_us=4.0),
                row("braid", 1 << 20, 150.0, 7.0, variant="processes", issue_us=7.0, empty_launch_us=4.0)]
        run = Run("onegpu-test", META, rows)
        run.order = 0
        within = bars.Bar("t", "t", r"onegpu-.*", [bars.Absolute("us", "8", "64K", "<=", 100, variant="processes")])
        self.assertEqual(within.judge({"onegpu-test": run})[1:], ("met", "17.5 us"))
        beyond = bars.Bar("t", "t", r"onegpu-.*", [bars.Absolute("us", "8", "1M", "<=", 100, variant="processes")])
        self.assertEqual(beyond.judge({"onegpu-test": run})[1], "missed")
        issue = bars.Absolute("issue", "8", "1M", "<=", 1.5, variant="processes").ratios(run, "allreduce", None)
        self.assertEqual(issue, {8: 1.25, 1 << 20: 1.75})

    def test_a_ratio_near_one_shows_the_decimals_that_decide_it(self):
        self.assertEqual(bars._ratio(0.9997), "0.9997x")
        self.assertEqual(bars._ratio(0.991), "0.991x")
        self.assertEqual(bars._ratio(1.5), "1.50x")

    def test_a_bar_with_no_run_is_not_measured(self):
        bar = bars.Bar("t", "t", r"nothing-.*", [bars.Check("busbw", "8", "8", ">=", 1, "nccl")])
        self.assertEqual(bar.judge({})[1], "not measured")


class Committed(unittest.TestCase):
    def test_every_committed_run_has_provenance(self):
        load_runs(generate.RESULTS)

    def test_the_document_is_current(self):
        with open(generate.OUTPUT) as f:
            self.assertEqual(f.read(), generate.render(load_runs(generate.RESULTS)),
                             "docs/BENCHMARKS.md differs from bench/results: run bench/report/generate.py")


if __name__ == "__main__":
    unittest.main()
