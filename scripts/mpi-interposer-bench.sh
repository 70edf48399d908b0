#!/usr/bin/env bash
# The MPI interposer's bars, with bench/mpi_interposer_bench.c:
#   host:   8-byte MPI_Allreduce of host buffers, the MPI alone and with libbraid_mpi.so preloaded, alternating
#           ROUNDS times (the added time per call is the difference of medians);
#   device: MPI_Allreduce of GPU buffers through the interposer against braid's own API (needs a GPU).
# Usage: scripts/mpi-interposer-bench.sh host|device [RANKS] [ROUNDS] [MAX_BYTES (device)]; BRAID_BUILD_DIR picks
# the build (build). Besides the table, it writes a results file, JSON (default
# BUILD/mpi-interposer-MODE-DATE.json): one row per line of the table (impl mpi with variant "interposer absent"
# or "interposer preloaded"; device: braid's rows, variants "waited" and "queued"), each with its "round", and
# the meta of bench/results/README.md (the commit the build recorded, this command line, Open MPI's version).
set -euo pipefail
command_line=""
for name in BRAID_BUILD_DIR JSON $(compgen -e | grep -E '^(BRAID|OMPI)_' | grep -v '^BRAID_BUILD_DIR$' | sort); do
  value=${!name:-}
  # Quoted for the shell where it needs it, in single quotes (readable: VARIANTS='A= A=1').
  [[ -n $value ]] && { [[ $(printf '%q' "$value") == "$value" ]] || value=${value@Q}; command_line+="$name=$value "; }
done
command_line+="$(printf '%q ' "$0" "$@")"
command_line=${command_line% }
started=$(date -u +%FT%TZ)
json=${JSON:-}
[[ -z $json || $json == /* ]] || json=$PWD/$json
cd "$(dirname "$0")/.."
mode=${1:-host} ranks=${2:-2} rounds=${3:-3}
build=${BRAID_BUILD_DIR:-build}
bench=$build/bin/braid-bench-mpi-interposer
interposer=$(realpath "$build/mpi/libbraid_mpi.so")
json=${json:-$build/mpi-interposer-$mode-$(date -u +%F).json}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi=(mpirun -np "$ranks" --mca btl self,vader --bind-to none)
table=$(mktemp)
trap 'rm -f "$table"' EXIT
echo "# $started $(hostname) $(nproc) cores; $(mpirun --version | head -1)"
if [ "$mode" = host ]; then
  for ((i = 0; i < rounds; ++i)); do
    echo "## round $i"
    "${mpi[@]}" "$bench" host | grep -v "^ *bytes"
    "${mpi[@]}" -x LD_PRELOAD="$interposer" "$bench" host | grep -v "^ *bytes"
  done
else
  echo "## round 0"
  "${mpi[@]}" -x LD_PRELOAD="$interposer" "$bench" device "${4:-1073741824}"
fi | tee "$table"

# The table as rows: "## round I" starts a round, "# N ranks, host|GPU buffers, interposer preloaded|absent; ..." a
# run, and every other line is "bytes MPI_Allreduce braid-waited braid-queued wrong" (microseconds per call).
python3 - "$table" "$json" "$mode" "$ranks" "$command_line" "$started" "$build" <<'PY'
import json, os, re, sys
sys.path.insert(0, "scripts")
import bench_meta

table, out, mode, ranks, command, started, build = sys.argv[1:]
ranks = int(ranks)
rows, rnd, preloaded = [], 0, None


def row(impl, variant, nbytes, us, wrong):
    algbw = nbytes / us / 1e3 if us > 0 else 0.0
    return dict(impl=impl, variant=variant, round=rnd, collective="allreduce", dtype="float32", redop="sum", root=-1,
                mem="device" if mode == "device" else "host", ranks=ranks, bytes=nbytes, count=nbytes // 4,
                time_us=us, algbw_gbs=algbw, busbw_gbs=algbw * 2 * (ranks - 1) / ranks, wrong=wrong)


for line in open(table):
    if line.startswith("## round"):
        rnd = int(line.split()[2])
    elif line.startswith("#"):
        if "interposer" in line:
            preloaded = "interposer preloaded" in line
    elif line.strip():
        nbytes, via_mpi, waited, queued, wrong = line.split()
        nbytes, wrong = int(nbytes), int(wrong)
        rows.append(row("mpi", "interposer preloaded" if preloaded else "interposer absent", nbytes, float(via_mpi),
                        wrong))
        if mode == "device":
            rows.append(row("braid", "waited", nbytes, float(waited), wrong))
            rows.append(row("braid", "queued", nbytes, float(queued), wrong))
if not rows:
    sys.exit("mpi-interposer-bench: the benchmark printed no rows")
link = f"{ranks} ranks on one host, Open MPI btl self,vader (shared memory)"
if mode == "device":
    link += "; braid (through the interposer and its own API): its own choice between the GPUs"
meta = bench_meta.meta(command, link, {"mpi": bench_meta.mpi_version() or "unknown"}, date=started,
                       commit=bench_meta.build_commit(build) or bench_meta.source_commit())
meta["method"] = ("bench/mpi_interposer_bench.c: median of 7 timed loops per line, microseconds per call, slowest "
                  "rank; float32 sums out of place, checked exactly" +
                  ("; wrong: the MPI call's and braid's checks of that line together" if mode == "device" else ""))
doc = {"meta": meta, "results": rows}
problems = bench_meta.check(doc)
if problems:
    sys.exit("mpi-interposer-bench: " + "; ".join(problems))
with open(out, "w") as f:
    json.dump(doc, f, indent=1, sort_keys=True)
    f.write("\n")
print(f"# results: {out}")
PY
