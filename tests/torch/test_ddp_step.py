"""bench/ddp_step.py: a DDP training step under braid and Gloo in one sitting, each run its own processes with its
knobs, the passes in alternating orders, the replicas compared bit for bit, and a results file whose meta passes
the check every committed file passes."""

import argparse
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import bench_meta  # noqa: E402
import ddp_step  # noqa: E402

BENCH = os.path.join(ROOT, "bench", "ddp_step.py")


def test_a_run_names_its_backend_and_knobs():
    assert ddp_step.parse_run("gloo") == ("gloo", {})
    assert ddp_step.parse_run("braid:BRAID_SHM_THREADS=1,BRAID_SPIN_US=0") == (
        "braid", {"BRAID_SHM_THREADS": "1", "BRAID_SPIN_US": "0"})
    assert ddp_step.variant_of({"B": "2", "A": "1"}) == "A=1,B=2"
    for bad, named in (("mpi", "'mpi'"), ("braid:BRAID_SHM_THREADS", "'BRAID_SHM_THREADS'"), ("braid:=1", "'=1'")):
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(named)):
            ddp_step.parse_run(bad)


def test_steps_of_two_backends_in_one_file(tmp_path):
    out = tmp_path / "ddp.json"
    cmd = [sys.executable, BENCH, "--nranks", "2", "--run", "gloo", "--run", "braid:BRAID_SHM_THREADS=1",
           "--passes", "2", "--steps", "2", "--warmup", "1", "--dim", "32", "--layers", "1", "--vocab", "128",
           "--context", "16", "--json", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    # Pass 2 runs the runs in the opposite order.
    passes = [line.split()[2] for line in done.stdout.splitlines() if line.startswith("pass ")]
    assert passes == ["gloo", "braid", "braid", "gloo"], done.stdout
    doc = json.loads(out.read_text())
    assert bench_meta.check(doc, allow_unknown_commit=True) == []
    assert doc["meta"]["model"]["params"] > 0 and doc["meta"]["torch_threads"] >= 1
    rows = {(r["impl"], r["variant"]): r for r in doc["results"]}
    assert set(rows) == {("gloo", ""), ("braid", "BRAID_SHM_THREADS=1")}
    for r in rows.values():
        assert r["collective"] == "ddp_step" and r["wrong"] == 0
        assert r["bytes"] == 4 * r["count"] == 4 * doc["meta"]["model"]["params"]
        assert len(r["steps_ms"]) == 4 and len(r["passes_ms"]) == 2 and r["time_us"] > 0
        assert min(r["steps_ms"]) * 1e3 <= r["time_us"] <= max(r["steps_ms"]) * 1e3
    # The same model on the same data: the last losses agree across the backends.
    a, b = (r["last_loss"][-1] for r in rows.values())
    assert abs(a - b) <= 1e-3 * abs(a)
