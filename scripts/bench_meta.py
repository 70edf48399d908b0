#!/usr/bin/env python3
"""The "meta" of a benchmark results file (bench/results/README.md): the command, the commit of the tree that was
built and run, when, on what machine and link, and the version of every peer whose rows the file holds. The Python
tools build it here (bench/torch_bench.py, scripts/merge-results.py, the shell benches through them) as `braid
bench` and the drivers build it in C++ (tools/bench/provenance.cpp); check() is the one test of a file's meta that
the merge, the scripts and the test suite share.

    scripts/bench_meta.py check FILE.json...   # each problem on stderr, exit 1 when there is any
    scripts/bench_meta.py mpi-version           # "Open MPI v4.1.4", from ompi_info or mpirun

The commit comes from BRAID_SOURCE_COMMIT (and BRAID_SOURCE_DIRTY_FILES) when set, as for a tree copied without
usable git metadata; else from git, as cmake/write_commit.cmake records it for the C++ tools.
"""

import ctypes
import datetime
import os
import re
import shlex
import subprocess
import sys

REQUIRED = ("command", "commit", "date", "machine", "peers")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def iso_now():
    """Now, ISO 8601 UTC to the second: "2026-12-02T09:32:00Z"."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def shell_command(argv):
    """argv as a line a POSIX shell runs again."""
    return " ".join(shlex.quote(a) for a in argv)


def _split_paths(text):
    return [p for p in re.split(r"[\s,]+", text or "") if p]


def _git(tree, *args):
    # --no-optional-locks: others commit in the same checkout; a status must not hold .git/index.lock.
    out = subprocess.run(["git", "--no-optional-locks", "-C", tree, *args], capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise OSError(out.stderr.strip() or f"git {' '.join(args)} failed")
    return out.stdout


def source_commit(tree=REPO):
    """(commit, dirty_files) of `tree` as write_commit.cmake records them: BRAID_SOURCE_COMMIT when set, else git
    describe, "-dirty" when git status lists anything (untracked files too: the build globs its sources); ("unknown",
    []) when there is neither."""
    env = os.environ.get("BRAID_SOURCE_COMMIT", "")
    if env:
        return env, _split_paths(os.environ.get("BRAID_SOURCE_DIRTY_FILES", ""))
    try:
        commit = _git(tree, "describe", "--always", "--abbrev=12").strip()
        files = []
        for line in _git(tree, "status", "--porcelain").splitlines():
            if len(line) > 3:
                path = line[3:]
                files.append(path.split(" -> ", 1)[1] if " -> " in path else path)
    except (OSError, FileNotFoundError):
        return "unknown", []
    if not commit:
        return "unknown", []
    return (commit + "-dirty", files) if files else (commit, [])


def build_commit(build_dir):
    """(commit, dirty_files) that the last build in `build_dir` recorded (tools/generated/braid_commit.h): the tree
    its binaries came from, which may differ from the tree now. None where there is no such header."""
    header = os.path.join(build_dir, "tools", "generated", "braid_commit.h")
    try:
        with open(header) as f:
            text = f.read()
    except OSError:
        return None
    commit = re.search(r'#define BRAID_COMMIT "((?:[^"\\]|\\.)*)"', text)
    dirty = re.search(r'#define BRAID_DIRTY_FILES "((?:[^"\\]|\\.)*)"', text)
    if not commit:
        return None

    def unescape(s):
        return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), s)

    files = [p for p in unescape(dirty.group(1)).split("\n") if p] if dirty else []
    return unescape(commit.group(1)), files


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") or line.startswith("Model"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def gpu_models():
    """One model name per GPU, from the CUDA driver (libcuda.so.1); [] without a driver or a GPU. Initialises the
    driver in this process: a process that forks CUDA ranks asks this in a child, or starts them with spawn."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return []
    count = ctypes.c_int(0)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return []
    models = []
    for i in range(count.value):
        dev = ctypes.c_int(0)
        name = ctypes.create_string_buffer(256)
        ok = cuda.cuDeviceGet(ctypes.byref(dev), i) == 0 and cuda.cuDeviceGetName(name, 256, dev) == 0
        models.append(name.value.decode(errors="replace") if ok else "unknown GPU")
    return models


def gpu_link(ranks, gpus):
    """What joins the GPUs of ranks 0..ranks-1 (rank r on GPU r % gpus), from `nvidia-smi topo -m`: "2 GPUs joined
    by NVLink (NV18)", "... by PCIe (PHB)"; "one GPU shared by 2 ranks"."""
    used = min(ranks, gpus)
    if ranks == 1:
        return "one rank on one GPU"
    if used < 2:
        return f"one GPU shared by {ranks} ranks"
    try:
        out = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, check=False).stdout
    except FileNotFoundError:
        return f"{used} GPUs (no nvidia-smi to say what joins them)"
    rows = [re.sub(r"\x1b\[[0-9;]*m", "", line).split() for line in out.splitlines()]
    # The header names the columns (GPU0 GPU1 ... CPU Affinity ...); each GPU's row starts with its own name.
    head = next((i for i, tokens in enumerate(rows) if "GPU0" in tokens), None)
    body = {t[0]: t[1:] for t in rows[head + 1:] if t and re.fullmatch(r"GPU\d+", t[0])} if head is not None else {}
    cells = set()
    for a in range(used):
        for b in range(a + 1, used):
            row, column = body.get(f"GPU{a}"), f"GPU{b}"
            if not row or column not in rows[head] or rows[head].index(column) >= len(row):
                return f"{used} GPUs (nvidia-smi topo -m did not say what joins them)"
            cells.add(row[rows[head].index(column)])
    if cells and all(c.startswith("NV") for c in cells):
        return f"{used} GPUs joined by NVLink ({', '.join(sorted(cells))})"
    return f"{used} GPUs joined by PCIe ({', '.join(sorted(cells)) or 'unknown'})"


def machine(link, gpus=None):
    """The schema's `machine`: {"cpu", "cores", "gpus": [...], "link"}."""
    return {"cpu": cpu_model(), "cores": usable_cores(), "gpus": gpu_models() if gpus is None else gpus,
            "link": link}


def mpi_version():
    """The installed Open MPI as MPI_Get_library_version starts: "Open MPI v4.1.4"; None where there is none."""
    for argv in (["ompi_info", "--version"], ["mpirun", "--version"]):
        try:
            out = subprocess.run(argv, capture_output=True, text=True, check=False).stdout
        except FileNotFoundError:
            continue
        match = re.search(r"Open MPI\)? v?(\d+\.\d+(?:\.\d+)?\S*)", out)
        if match:
            return f"Open MPI v{match.group(1)}"
    return None


# BRAID_* variables that say where the tools and sources are, not how braid runs.
NOT_KNOBS = {"BRAID_BENCH_DIR", "BRAID_BUILD_DIR", "BRAID_CLI", "BRAID_COMMIT", "BRAID_SOURCE_COMMIT",
             "BRAID_SOURCE_DIRTY_FILES"}


def knobs(environ=None):
    """The BRAID_* knobs set in the environment (as `braid bench` records them): what changes what braid runs beside
    the command. Secrets (*TOKEN*) and the variables that only locate tools and sources are left out."""
    environ = os.environ if environ is None else environ
    return {k: v for k, v in sorted(environ.items())
            if k.startswith("BRAID_") and "TOKEN" not in k and k not in NOT_KNOBS}


def tuned(environ=None):
    """What the tune file `braid tune` wrote gives the knobs the environment leaves unset, as `braid bench` records
    it: "BRAID_DIRECT_MAX_BYTES=131072 from /root/.cache/braid/tune.env"; "" when nothing. The file is the one a
    communicator reads: BRAID_TUNE_FILE, else ~/.cache/braid/tune.env."""
    environ = os.environ if environ is None else environ
    path = environ.get("BRAID_TUNE_FILE") or (os.path.join(environ["HOME"], ".cache/braid/tune.env")
                                               if environ.get("HOME") else "")
    if not path or not os.path.isfile(path):
        return ""
    taken = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("export "):
                line = line[len("export "):]
            name, eq, value = line.partition("=")
            if line.startswith("#") or not eq or not name.startswith("BRAID_") or name in environ:
                continue
            if len(value) >= 2 and value[0] == value[-1] == "'":
                value = value[1:-1]
            taken.append(f"{name}={value.strip()}")
    return f"{', '.join(taken)} from {path}" if taken else ""


def meta(command, link, peers, date=None, commit=None, gpus=None):
    """A complete meta. `commit`: (commit, dirty_files), default source_commit() of this repository. `knobs` where
    the environment sets any, `tuned` where the tune file sets others."""
    commit, dirty = commit or source_commit()
    out = {"command": command, "commit": commit, "date": date or iso_now(), "machine": machine(link, gpus),
           "peers": dict(peers)}
    if dirty or commit.endswith("-dirty"):
        out["dirty_files"] = list(dirty)
    set_knobs = knobs()
    if set_knobs:
        out["knobs"] = set_knobs
    from_file = tuned()
    if from_file:
        out["tuned"] = from_file
    return out


def peer_of(impl):
    """The library a row's impl names: "nccl+graph" -> "nccl", "braid+reg" -> "braid"."""
    return str(impl).split("+", 1)[0]


def parse_date(text):
    """A datetime from ISO 8601 text with a time and a UTC offset ("...Z" or "+00:00"); ValueError otherwise."""
    if not isinstance(text, str) or "T" not in text:
        raise ValueError(f"{text!r} is not an ISO 8601 date and time")
    value = datetime.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    if value.utcoffset() != datetime.timedelta(0):
        raise ValueError(f"{text!r} is not in UTC")
    return value


def check(doc, allow_unknown_commit=False):
    """Every problem of a results document's meta, as sentences; [] when it has all the schema asks."""
    problems = []
    if not isinstance(doc, dict):
        return ["the file is not a JSON object"]
    rows = doc.get("results")
    if not isinstance(rows, list):
        problems.append("no list of rows under 'results'")
        rows = []
    m = doc.get("meta")
    if not isinstance(m, dict):
        return problems + ["no object under 'meta'"]
    for key in REQUIRED:
        if key not in m:
            problems.append(f"meta lacks '{key}'")
    if "command" in m and (not isinstance(m["command"], str) or not m["command"].strip()):
        problems.append("meta.command is empty")
    commit = m.get("commit")
    if "commit" in m:
        if not isinstance(commit, str) or not commit.strip():
            problems.append("meta.commit is empty")
        elif commit.startswith("unknown") and not allow_unknown_commit:
            problems.append("meta.commit is 'unknown': build from a git checkout or set BRAID_SOURCE_COMMIT")
        elif commit.endswith("-dirty"):
            files = m.get("dirty_files")
            if not isinstance(files, list) or not files or not all(isinstance(f, str) and f for f in files):
                problems.append(f"meta.commit {commit} is dirty but meta.dirty_files does not list the paths")
    if "date" in m:
        try:
            # A run whose provenance was recovered after the fact may know its day but not its hour.
            if m.get("recovered") and isinstance(m["date"], str) and len(m["date"]) == 10:
                datetime.date.fromisoformat(m["date"])
            else:
                parse_date(m["date"])
        except (TypeError, ValueError) as e:
            problems.append(f"meta.date: {e}")
    mach = m.get("machine")
    if "machine" in m:
        if not isinstance(mach, dict):
            problems.append("meta.machine is not an object {cpu, cores, gpus, link}")
        else:
            if not isinstance(mach.get("cpu"), str) or not mach.get("cpu"):
                problems.append("meta.machine.cpu is missing or empty")
            cores = mach.get("cores")
            if not isinstance(cores, int) or isinstance(cores, bool) or cores <= 0:
                problems.append(f"meta.machine.cores is {cores!r}, not a count above 0")
            gpus = mach.get("gpus")
            if not isinstance(gpus, list) or not all(isinstance(g, str) and g for g in gpus):
                problems.append("meta.machine.gpus is not a list of GPU models")
            if not isinstance(mach.get("link"), str) or not mach.get("link").strip():
                problems.append("meta.machine.link is missing or empty")
    peers = m.get("peers")
    if "peers" in m:
        if not isinstance(peers, dict):
            problems.append("meta.peers is not an object")
        else:
            for impl in sorted({peer_of(r.get("impl", "")) for r in rows if isinstance(r, dict)} - {"braid", ""}):
                version = peers.get(impl)
                if not isinstance(version, str) or not version.strip():
                    problems.append(f"rows of {impl} but no version of it in meta.peers")
            # bench/torch_bench.py's runs (mem "cpu" or "cuda") measure through torch: its version is a peer's.
            if m.get("mem") in ("cpu", "cuda") and not peers.get("torch"):
                problems.append("a torch run without meta.peers.torch")
    return problems


def _main(argv):
    if argv[:1] == ["mpi-version"]:
        version = mpi_version()
        if not version:
            sys.exit("bench_meta: no Open MPI here (ompi_info and mpirun say nothing)")
        print(version)
        return
    if argv[:1] != ["check"] or len(argv) < 2:
        sys.exit(__doc__)
    import json

    bad = 0
    for path in argv[1:]:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"{path}: {e}", file=sys.stderr)
            bad += 1
            continue
        for problem in check(doc):
            print(f"{path}: {problem}", file=sys.stderr)
            bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    _main(sys.argv[1:])
