#!/usr/bin/env python3
"""Every results file must say where its rows come from (bench/results/README.md, "Meta"). This runs `braid bench
--json` (2 ranks, tiny sizes, with every peer whose driver is built) and holds its meta to the schema through
scripts/bench_meta.py's check, the one the merge and the scripts use; it also shows that check refusing what lacks
a field, and scripts/merge-results.py keeping the fields, the peers and the variants of one run.

    BRAID_BENCH_DIR=build/bin python3 tests/tools/bench_meta_test.py
"""
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import bench_meta  # noqa: E402

BIN = os.environ.get("BRAID_BENCH_DIR", os.path.join(REPO, "build", "bin"))


def built_peers():
    """The peers braid bench can compare with here: those whose driver is built (and mpirun, for MPI)."""
    peers = []
    if os.access(os.path.join(BIN, "braid-bench-gloo"), os.X_OK):
        peers.append("gloo")
    if os.access(os.path.join(BIN, "braid-bench-mpi"), os.X_OK) and shutil.which("mpirun"):
        peers.append("mpi")
    return peers


def tree_has_git():
    return subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True).returncode == 0


class BraidBenchMeta(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        braid = os.path.join(BIN, "braid")
        if not os.access(braid, os.X_OK):
            raise unittest.SkipTest(f"no {braid}")
        cls.tmp = tempfile.mkdtemp(prefix="braid-bench-meta-")
        cls.json = os.path.join(cls.tmp, "bench.json")
        cls.peers = built_peers()
        argv = [braid, "bench", "allreduce", "-b", "8", "-e", "64", "-f", "8", "-n", "1", "-w", "0", "--nranks", "2",
                "--bind", "none", "--json", cls.json]
        if cls.peers:
            argv += ["--compare", ",".join(cls.peers)]
        run = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {run.returncode}:\n{run.stdout}\n{run.stderr}")
        with open(cls.json) as f:
            cls.doc = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_meta_passes_the_schema_check(self):
        # Without git, a build can only say "unknown" unless BRAID_SOURCE_COMMIT was set for it.
        self.assertEqual(bench_meta.check(self.doc, allow_unknown_commit=not tree_has_git()), [],
                         json.dumps(self.doc["meta"], indent=1))

    def test_fields_are_well_formed(self):
        m = self.doc["meta"]
        self.assertIn("braid bench allreduce", m["command"])
        self.assertIn("--json", m["command"])
        self.assertTrue(m["commit"].strip())
        if m["commit"].endswith("-dirty"):
            self.assertTrue(m["dirty_files"], "a dirty commit without the paths that differ")
        date = bench_meta.parse_date(m["date"])
        self.assertLess(abs((bench_meta.parse_date(bench_meta.iso_now()) - date).total_seconds()), 600)
        self.assertIsInstance(m["machine"]["cores"], int)
        self.assertGreater(m["machine"]["cores"], 0)
        self.assertTrue(m["machine"]["cpu"])
        self.assertIsInstance(m["machine"]["gpus"], list)
        # Alone, braid's link is the link; beside peers, each names what joined its own ranks.
        link = m["machine"]["link"]
        self.assertTrue(link.startswith("braid: shared memory; " if self.peers else "shared memory"), link)

    def test_every_peer_that_ran_has_its_version_and_no_other(self):
        impls = {bench_meta.peer_of(r["impl"]) for r in self.doc["results"]}
        self.assertEqual(impls, {"braid", *self.peers})
        self.assertEqual(set(self.doc["meta"]["peers"]), set(self.peers))
        if "mpi" in self.peers:
            self.assertTrue(self.doc["meta"]["peers"]["mpi"].startswith("Open MPI"), self.doc["meta"]["peers"])
        if "gloo" in self.peers:
            self.assertTrue(self.doc["meta"]["peers"]["gloo"].startswith("Gloo "), self.doc["meta"]["peers"])

    def test_check_refuses_each_missing_or_malformed_field(self):
        for key in bench_meta.REQUIRED:
            broken = copy.deepcopy(self.doc)
            del broken["meta"][key]
            self.assertTrue(any(f"'{key}'" in p for p in bench_meta.check(broken)), key)
        bad = {
            "date": "2026-11-30",  # a day, no time: when in it?
            "commit": "",
            "machine": "Intel(R) Xeon(R) Processor, 2 cores",  # a line, not the object
        }
        for key, value in bad.items():
            broken = copy.deepcopy(self.doc)
            broken["meta"][key] = value
            self.assertNotEqual(bench_meta.check(broken), [], f"{key}={value!r} passed")
        broken = copy.deepcopy(self.doc)
        broken["meta"]["machine"]["cores"] = 0
        self.assertNotEqual(bench_meta.check(broken), [])
        broken = copy.deepcopy(self.doc)
        broken["meta"]["commit"] = "0123456789ab-dirty"
        broken["meta"].pop("dirty_files", None)
        self.assertNotEqual(bench_meta.check(broken), [])
        broken = copy.deepcopy(self.doc)
        broken["results"].append(dict(broken["results"][0], impl="nccl+graph"))
        self.assertTrue(any("nccl" in p for p in bench_meta.check(broken)))

    def test_merge_keeps_the_meta_the_peers_and_the_variants_of_one_run(self):
        only_braid = copy.deepcopy(self.doc)
        only_braid["results"] = [r for r in only_braid["results"] if r["impl"] == "braid"]
        peers = copy.deepcopy(self.doc)
        peers["results"] = [r for r in peers["results"] if r["impl"] != "braid"]
        peers["meta"]["command"] = "the peers' command"
        peers["meta"]["bind"] = {"mpi": "core"}  # placed otherwise than the braid-only inputs
        peers["meta"]["cpus"] = {"mpi": ["0", "1"]}
        paths = []
        for name, doc in (("a", only_braid), ("b", only_braid), ("peers", peers)):
            paths.append(os.path.join(self.tmp, name + ".json"))
            with open(paths[-1], "w") as f:
                json.dump(doc, f)
        out = os.path.join(self.tmp, "merged.json")
        run = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "merge-results.py"), out, "--command",
                              "VARIANTS='X= X=1' scripts/netns-bench.sh 2 1 10gbit out.json", "--link", "the bed",
                              "--variant", "X=", paths[0], "--variant", "X=1", paths[1], "--variant", "", paths[2]],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        with open(out) as f:
            merged = json.load(f)
        m = merged["meta"]
        self.assertEqual(bench_meta.check(merged, allow_unknown_commit=not tree_has_git()), [])
        self.assertEqual(m["command"], "VARIANTS='X= X=1' scripts/netns-bench.sh 2 1 10gbit out.json")
        self.assertEqual(m["source_commands"], [self.doc["meta"]["command"]] * 2 + ["the peers' command"])
        self.assertTrue(m["machine"]["link"].startswith("the bed; braid: "), m["machine"]["link"])
        # Placements that differ are listed per input rather than taken from the first.
        self.assertNotIn("bind", m)
        self.assertEqual(m["source_binds"], [self.doc["meta"]["bind"]] * 2 + [{"mpi": "core"}])
        self.assertNotIn("cpus", m)
        self.assertEqual(m["source_cpus"], [self.doc["meta"].get("cpus")] * 2 + [{"mpi": ["0", "1"]}])
        self.assertEqual(set(m["peers"]), set(self.peers))
        variants = [(r["impl"], r.get("variant")) for r in merged["results"]]
        self.assertEqual(variants.count(("braid", "X=")), len(only_braid["results"]))
        self.assertEqual(variants.count(("braid", "X=1")), len(only_braid["results"]))
        self.assertTrue(all(v is None for impl, v in variants if impl != "braid"))

    def test_merge_refuses_inputs_without_provenance(self):
        old = copy.deepcopy(self.doc)
        old["meta"] = {"impl": "braid+nccl", "mem": "device", "nccl": "", "nccl_version": 0}  # as files once were
        path = os.path.join(self.tmp, "old.json")
        with open(path, "w") as f:
            json.dump(old, f)
        out = os.path.join(self.tmp, "refused.json")
        run = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "merge-results.py"), out, path],
                             capture_output=True, text=True)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("lacks 'machine'", run.stderr)
        self.assertFalse(os.path.exists(out))


class Knobs(unittest.TestCase):
    def test_the_knobs_set_are_recorded_secrets_and_locations_left_out(self):
        env = {"BRAID_SHM_THREADS": "1", "BRAID_TOKEN": "secret", "BRAID_TOKEN_FILE": "/f", "BRAID_BENCH_DIR": "/b",
               "BRAID_SOURCE_COMMIT": "abc", "PATH": "/bin"}
        self.assertEqual(bench_meta.knobs(env), {"BRAID_SHM_THREADS": "1"})
        self.assertEqual(bench_meta.knobs({"PATH": "/bin"}), {})

    def test_the_tune_files_knobs_are_recorded_where_the_environment_leaves_them(self):
        with tempfile.TemporaryDirectory() as home:
            os.makedirs(os.path.join(home, ".cache/braid"))
            path = os.path.join(home, ".cache/braid/tune.env")
            with open(path, "w") as f:
                f.write("# braid tune\nBRAID_DIRECT_MAX_BYTES=131072\nexport BRAID_SPIN_US='7'\nPATH=/x\n")
            self.assertEqual(bench_meta.tuned({"HOME": home}),
                             f"BRAID_DIRECT_MAX_BYTES=131072, BRAID_SPIN_US=7 from {path}")
            self.assertEqual(bench_meta.tuned({"HOME": home, "BRAID_SPIN_US": "0"}),
                             f"BRAID_DIRECT_MAX_BYTES=131072 from {path}")
            self.assertEqual(bench_meta.tuned({"HOME": home, "BRAID_TUNE_FILE": "/nonexistent"}), "")
            self.assertEqual(bench_meta.tuned({}), "")


if __name__ == "__main__":
    unittest.main(verbosity=2)
