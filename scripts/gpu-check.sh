#!/usr/bin/env bash
# The one script to run on a lent GPU machine (CUDA 13, cmake, ninja; no network, no Debian -dev packages):
#   1. unpacks the .deb files carried in .debs/ (made here by scripts/fetch-gpu-debs.sh) into .debs/root with
#      dpkg -x (never over /) and points CMake, the compilers and the linker at them;
#   2. configures and builds braid with CUDA for sm_90 into ${BRAID_BUILD_DIR:-build-gpu-check};
#   3. prints nvidia-smi and runs the GPU tests (ctest -L gpu), then the unit, multirank and fault tests;
#   4. bench-tcp: the host allreduce sweep over braid's TCP transport against Open MPI's TCP btl, into $OUT;
#      bench-shm: the host allreduce over shared memory against Gloo and Open MPI at SHM_RANKS (2 4 8 16), into $OUT;
#      bench-ab: braid alone under each setting of one knob in turn (AB=KNOB=V1,V2, AB_RANKS, AB_PASSES, AB_ARGS);
#   5. sanitizer: compute-sanitizer memcheck, racecheck and synccheck over the GPU semantics tests;
#   6. torch: braid_torch built against the machine's torch, then tests/torch (CPU and CUDA tensors), then braid's
#      libnccl.so.2 under torch's own NCCL backend (scripts/nccl-torch-check.sh);
#   7. torch-bench: dist.all_reduce through braid against NCCL (bench/torch_bench.py) and the DDP example's step;
#      hardware: braid detect, doctor, env and tune --mem device;
#      fault-matrix: scripts/fault-matrix.sh's random cases, several at once (FAULT_RUNS, FAULT_PROXY_RUNS, FAULT_JOBS);
#      netns-bench: braid, Gloo and Open MPI on the shaped namespace bed (scripts/netns-bench.sh) on this machine's
#      cores, for the link-rate bars (NETNS_RUNS: "HOSTS:RANKS:RATE[:COMPRESS] ...", default 2:1:10gbit
#      4:1:2500mbit 2:1:10gbit:bf16, the last with BRAID_COMPRESS=bf16);
#      netns-device: braid against NCCL on GPU buffers between namespace hosts (scripts/netns-device-bench.sh;
#      NETNS_DEVICE_RUNS: "HOSTS:RATE ...", default 2:10gbit);
#   8. bench-device: braid against NCCL on device buffers (braid-bench-device), one JSON per collective, into $OUT,
#      merged into results.json and plotted into results.png (scripts/merge-results.py, scripts/plot-results.py).
# Logs and JUnit files go to $OUT when it is set, else to the build directory's logs/.
#
# Usage: scripts/gpu-check.sh [STAGE...]   STAGE: build, gpu, unit, multirank, faults, bench-tcp, bench-shm, bench-ab,
#        sanitizer, torch, torch-bench, hardware, netns-bench, netns-device, bench-device, all
# (default: all). GPU_TESTS narrows the gpu stage (a ctest -R regex).
# Each stage reuses the build directory, so a run can be split over several calls of at most 10
# minutes: `scripts/gpu-check.sh build gpu`, then `scripts/gpu-check.sh unit multirank`. Exits non-zero when any
# stage failed; every stage runs even after an earlier one failed (except tests without a build).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
repo=$PWD
build=${BRAID_BUILD_DIR:-build-gpu-check}
case $build in /*) ;; *) build=$repo/$build ;; esac
logs=${OUT:-$build/logs}
mkdir -p "$logs"
jobs=$(nproc)
stages=("$@")
((${#stages[@]})) || stages=(all)
failed=()

log() { printf '== %s\n' "$*" | tee -a "$logs/summary.txt"; }
wants() {
  local s
  for s in "${stages[@]}"; do [[ $s == all || $s == "$1" ]] && return 0; done
  return 1
}

if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

# ---- 1. The carried packages: libssl-dev (+ libssl3), libgtest-dev, googletest.
cmake_args=()
if compgen -G ".debs/*.deb" >/dev/null; then
  root=$repo/.debs/root
  lib=$root/usr/lib/x86_64-linux-gnu
  rm -rf "$root"
  mkdir -p "$root"
  debs=(.debs/*.deb)
  for deb in "${debs[@]}"; do dpkg -x "$deb" "$root" || failed+=("unpack $deb"); done
  # libssl-dev's libcrypto.so/libssl.so link to the .so.3 of libssl3: when that was not carried, use the machine's.
  for link in "$lib/libcrypto.so" "$lib/libssl.so"; do
    if [ -L "$link" ] && [ ! -e "$link" ] && [ -e "/usr/lib/x86_64-linux-gnu/$(readlink "$link")" ]; then
      ln -sf "/usr/lib/x86_64-linux-gnu/$(readlink "$link")" "$link"
    fi
  done
  # Debian's OpenSSL headers are split: openssl/*.h in usr/include, configuration.h in usr/include/<multiarch>.
  # *_INCLUDE_PATH are searched like -isystem by gcc (and by nvcc's host compiler).
  inc=$root/usr/include/x86_64-linux-gnu:$root/usr/include
  export CPLUS_INCLUDE_PATH=$inc${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}
  export C_INCLUDE_PATH=$inc${C_INCLUDE_PATH:+:$C_INCLUDE_PATH}
  export LIBRARY_PATH=$lib${LIBRARY_PATH:+:$LIBRARY_PATH}
  # Some packages (libgloo0) put their libraries in usr/lib: binaries built elsewhere find them only on this path.
  export LD_LIBRARY_PATH=$lib:$root/usr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # Environment too, for the CMake runs the install test makes of its own.
  export CMAKE_PREFIX_PATH=$root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export OPENSSL_ROOT_DIR=$root/usr
  cmake_args+=(-DCMAKE_PREFIX_PATH="$root/usr" -DOPENSSL_ROOT_DIR="$root/usr"
               -DOPENSSL_INCLUDE_DIR="$root/usr/include" -DOPENSSL_CRYPTO_LIBRARY="$lib/libcrypto.so"
               -DOPENSSL_SSL_LIBRARY="$lib/libssl.so" -DGTest_DIR="$lib/cmake/GTest")
  log "unpacked ${#debs[@]} packages into $root: ${debs[*]##*/}"
else
  log "no .debs/*.deb: using the machine's own packages"
fi

# ---- 2. Configure and build.
if wants build; then
  # CMake before 3.26 (or so) has no C++20 flag for nvcc; harmless where it has one.
  if cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 -DBRAID_WITH_CUDA=ON "${cmake_args[@]}" \
      >"$logs/configure.log" 2>&1; then
    log "configured $build ($(cmake --version | head -1), $(nvcc --version | tail -1))"
  else
    failed+=(configure)
    log "configure FAILED: tail of $logs/configure.log"
    tail -30 "$logs/configure.log"
  fi
  start=$(date +%s)
  # BUILD_TARGETS="a b" builds only those (e.g. what one bench needs), not the whole tree and its tests.
  if cmake --build "$build" -j "$jobs" ${BUILD_TARGETS:+--target $BUILD_TARGETS} >"$logs/build.log" 2>&1; then
    log "built in $(($(date +%s) - start)) s"
  else
    failed+=(build)
    log "build FAILED: first errors of $logs/build.log"
    grep -m 20 -B2 -A6 -E "error|FAILED" "$logs/build.log"
  fi
  grep -E "warning" "$logs/build.log" | sort -u | head -20 >"$logs/build-warnings.txt"
fi

# ---- 3. The machine, then the tests.
if wants gpu || wants unit || wants multirank || wants faults; then
  { nvidia-smi && nvidia-smi topo -m; } >"$logs/nvidia-smi.txt" 2>&1
  cat "$logs/nvidia-smi.txt"
  if [ ! -f "$build/CTestTestfile.cmake" ]; then
    failed+=(tests)
    log "no build in $build: run the build stage first"
  fi
fi

# JUnit output needs ctest 3.21.
junit() { printf '%s\n' 3.21 "$(cmake --version | head -1 | awk '{print $3}')" | sort -V -C && echo --output-junit; }

run_ctest() {  # label, ctest arguments...
  local label=$1
  shift
  [ -f "$build/CTestTestfile.cmake" ] || return
  local start
  start=$(date +%s)
  local junit_args=()
  [ -n "$(junit)" ] && junit_args=(--output-junit "$logs/ctest-$label.xml")
  if (cd "$build" && ctest --output-on-failure --timeout 900 "${junit_args[@]}" "$@") \
      >"$logs/ctest-$label.log" 2>&1; then
    log "ctest $label passed in $(($(date +%s) - start)) s: $(grep -E 'tests passed' "$logs/ctest-$label.log")"
  else
    failed+=("ctest $label")
    log "ctest $label FAILED in $(($(date +%s) - start)) s:"
    grep -E "tests passed|\(Failed\)|\(Timeout\)|\(SEGFAULT\)|\(Subprocess aborted\)|Exception" \
      "$logs/ctest-$label.log" | head -40
  fi
  grep -c "(Skipped)" "$logs/ctest-$label.log" | xargs printf '   %s skipped\n' | tee -a "$logs/summary.txt"
}

# The GPU tests first: they are what this machine is for. Several at once: each holds ~0.2 GB of GPU memory. The
# resources test reads the GPU's free memory, which the others' allocations move: it runs alone, after them.
if wants gpu; then
  run_ctest gpu -L gpu -j 4 -E '^DeviceResources\.' ${GPU_TESTS:+-R "$GPU_TESTS"}
  if [ -z "${GPU_TESTS:-}" ] || [[ DeviceResources =~ $GPU_TESTS ]]; then run_ctest gpu-alone -L gpu -R '^DeviceResources\.'; fi
  # The NCCL API's device test, unchanged, against the real libnccl.so.2: its ranks share this machine's GPUs, so
  # each takes its own host id (the real NCCL refuses two ranks on one GPU of one host). Passing the same expected
  # values as braid's run of it (ctest's nccl_api_device_buffers*) is the two libraries agreeing.
  real_nccl=$(python3 -c 'import glob, site; print(next(iter(sorted(p for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/nccl/lib/libnccl.so.2"))), ""))' 2>/dev/null)
  [ -n "$real_nccl" ] || real_nccl=$(ls /usr/local/cuda/lib64/libnccl.so.2 2>/dev/null)
  if [ -x "$build/tests/braid_nccl_device_test" ] && [ -n "$real_nccl" ]; then
    if LD_LIBRARY_PATH=$(dirname "$real_nccl")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCL_NVLS_ENABLE=0 timeout 300 \
        "$build/tests/braid_nccl_device_test" 2 --distinct-hosts >"$logs/nccl-device-real.log" 2>&1; then
      log "the NCCL API device test passed on the real NCCL ($real_nccl): $(grep -m1 'NCCL version' "$logs/nccl-device-real.log")"
    else
      failed+=("nccl device test on the real NCCL")
      log "the NCCL API device test FAILED on the real NCCL ($real_nccl):"
      tail -20 "$logs/nccl-device-real.log"
    fi
  fi
fi
# The install test (label unit) packages rather than computes, and needs pkg-config: it runs on its own line of
# the summary, and only where pkg-config exists.
if wants unit; then
  run_ctest unit -L unit -j "$jobs" -E '^install_and_consume$'
  if command -v pkg-config >/dev/null; then
    run_ctest install -R '^install_and_consume$'
  else
    log "install test not run: no pkg-config here"
  fi
fi
wants multirank && run_ctest multirank -L multirank -j 4
wants faults && run_ctest faults -L faults -j 4

# ---- 4. The TCP transport on this host's cores, against Open MPI's TCP path, in one run.
if wants bench-tcp; then
  if [ -x "$build/bin/braid" ]; then
    json=$logs/tcp-$(hostname -s)-$(date +%F).json
    if BRAID_TRANSPORT=tcp "$build/bin/braid" bench allreduce -b 8 -e 64M -f 4 -n 20 -w 5 --nranks "${TCP_RANKS:-4}" \
        --compare mpi --json "$json" >"$logs/bench-tcp.txt" 2>&1; then
      log "bench-tcp: $json"
      tail -16 "$logs/bench-tcp.txt"
    else
      failed+=(bench-tcp)
      log "bench-tcp FAILED:"
      tail -20 "$logs/bench-tcp.txt"
    fi
  else
    log "bench-tcp not run: no $build/bin/braid"
  fi
fi

# ---- 4b. Shared memory on this host's cores, against Gloo and Open MPI: one run per rank count (SHM_RANKS), each
# size the median of 3 repetitions, into $OUT (the host allreduce's outcome runs). Each loop lasts at least 20 ms:
# 20 calls of 1 us would be timed over 20 us, where one rank taken off its core decides the row.
if wants bench-shm; then
  if [ -x "$build/bin/braid" ]; then
    for n in ${SHM_RANKS:-2 4 8 16}; do
      json=$logs/shm-allreduce-${n}ranks-$(hostname -s)-$(date +%F).json
      if BRAID_BENCH_DIR=$build/bin "$build/bin/braid" bench allreduce -b 8 -e 64M --nranks "$n" --reps 3 \
          --min-loop-ms 20 --compare gloo,mpi --json "$json" >"$logs/bench-shm-$n.txt" 2>&1; then
        log "bench-shm $n ranks: $json"
        tail -26 "$logs/bench-shm-$n.txt" | grep -E '^#|^ *[0-9]+ [KMG]?i?B' || true
      else
        failed+=("bench-shm $n")
        log "bench-shm $n ranks FAILED:"
        tail -20 "$logs/bench-shm-$n.txt"
      fi
    done
  else
    log "bench-shm not run: no $build/bin/braid"
  fi
fi

# ---- 4c. A knob's settings in turn (AB="KNOB=V1,V2,...", AB_RANKS, AB_PASSES, AB_ARGS: braid bench's sweep flags,
# default "-b 256K -e 64M --reps 3 --min-loop-ms 20"): braid alone, each setting once a pass, each pass starting one
# setting further on (a rotation) so that no setting always runs first on a machine that drifts; one JSON per rank
# count, setting and pass, into $OUT, as bench/report's setting_sweep reads them.
if wants bench-ab; then
  values=()
  [ -n "${AB:-}" ] && IFS=, read -r -a values <<<"${AB#*=}"
  bad=""
  [[ ${AB%%=*} =~ ^[A-Z_][A-Z0-9_]*$ ]] || bad="the knob is not a variable name"
  ((${#values[@]} >= 2)) || bad="it names fewer than two settings"
  for v in "${values[@]}"; do [[ $v =~ ^[A-Za-z0-9._-]+$ ]] || bad="setting '$v' is not letters, digits, '.', '_' or '-'"; done
  [[ ${AB_PASSES:-2} =~ ^[1-9][0-9]*$ ]] || bad="AB_PASSES='${AB_PASSES:-}' is not a positive count"
  if [ -z "${AB:-}" ]; then
    log "bench-ab not run: AB=KNOB=V1,V2[,...] names the knob and its settings"
  elif [ -n "$bad" ]; then
    failed+=(bench-ab)
    log "bench-ab: AB='$AB': $bad (e.g. AB=BRAID_SPIN_US=100,1000)"
  elif [ ! -x "$build/bin/braid" ]; then
    log "bench-ab not run: no $build/bin/braid"
  else
    knob=${AB%%=*}
    for n in ${AB_RANKS:-8}; do
      for ((pass = 1; pass <= ${AB_PASSES:-2}; pass++)); do
        for ((k = 0; k < ${#values[@]}; k++)); do
          v=${values[(pass - 1 + k) % ${#values[@]}]}
          json=$logs/shm-ab-${knob}-${v}-${n}ranks-pass${pass}-$(hostname -s)-$(date +%F).json
          # shellcheck disable=SC2086  # AB_ARGS is a list of braid bench flags
          if env "$knob=$v" BRAID_BENCH_DIR="$build/bin" "$build/bin/braid" bench allreduce --nranks "$n" \
              ${AB_ARGS:--b 256K -e 64M --reps 3 --min-loop-ms 20} --json "$json" \
              >"$logs/bench-ab-$knob-$v-$n-$pass.txt" 2>&1; then
            log "bench-ab $knob=$v, $n ranks, pass $pass: $json"
          else
            failed+=("bench-ab $knob=$v $n $pass")
            log "bench-ab $knob=$v, $n ranks, pass $pass FAILED:"
            tail -20 "$logs/bench-ab-$knob-$v-$n-$pass.txt"
          fi
        done
      done
    done
  fi
fi

# ---- 5. compute-sanitizer (memcheck, racecheck, synccheck) over the kernels' multi-process tests.
if wants sanitizer; then
  pids=()
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  # Every family of device kernels, by its smallest test: LL, one-shot (whole and 4 KiB chunks), two-shot, staged
  # through the host, the shared-GPU path, the moving collectives (kernels and shared path), variable counts and
  # point-to-point, registered buffers, CUDA-graph capture and replay, stream order, a killed peer, and the
  # reductions' and GPU-over-TCP windows' own kernels.
  sanitized="Algorithms/DeviceReductions.AFewAllreducesForTheSanitizers/*"
  sanitized+=":Paths/DeviceCollectives.AFewMovingCollectivesForTheSanitizers/*:Callers/DeviceStaging.VariableCountsAndPointToPointStageOn2Ranks/*"
  sanitized+=":RegisteredBuffers.CudaMallocBuffersAreReadInPlaceByProcessRanks"
  sanitized+=":DeviceSemantics.CollectivesAreCapturedIntoACudaGraphAndReplayed"
  sanitized+=":DeviceSemantics.DeviceCallsAreOrderedOnTheirStreamAndReturnWithoutWaiting"
  sanitized+=":DeviceSemantics.AKilledPeerBecomesPeerLostInsteadOfAHungGpu"
  sanitized+=":DeviceSemantics.AKilledPeerOnTheSharedGpuPathIsPeerLostWithinSeconds"
  sanitized+=":AllTypes/DeviceReduce.MatchesReferenceForEverySourceCountKernel/float32"
  sanitized+=":HalfTypes/DeviceScaleHalf.RoundsOnceAtEdges/bfloat16:Windows/DeviceOverTcpMoves.*/w64k"
  sanitized+=":StreamWrites.*"
  # One sanitizer run per test, as ctest runs them: a test whose process used CUDA cannot fork ranks after it. The
  # three tools at once (each its own processes on the one GPU): the stage takes the slowest tool's time.
  tests=()
  while IFS= read -r name; do tests+=("$name"); done < <("$build/tests/braid_gpu_tests" --gtest_list_tests \
    --gtest_filter="${SANITIZER_TESTS:-$sanitized}" | awk '/^[^ ]/ {suite=$1} /^  / {print suite $1}')
  log "compute-sanitizer: ${#tests[@]} tests under each of memcheck, racecheck, synccheck"
  for tool in memcheck racecheck synccheck; do
    (
      status=0
      for name in "${tests[@]}"; do
        BRAID_TIMEOUT=120 "$sanitizer" --tool "$tool" --target-processes all --error-exitcode 9 \
          "$build/tests/braid_gpu_tests" --gtest_filter="$name" || status=1
      done
      exit $status
    ) >"$logs/sanitizer-$tool.txt" 2>&1 &
    pids+=("$tool:$!")
  done
  for entry in "${pids[@]}"; do
    tool=${entry%%:*}
    if wait "${entry#*:}" && grep -q '^\[       OK \]' "$logs/sanitizer-$tool.txt"; then
      # A filter that matched nothing, or tests that all skipped, would pass with nothing checked: name what ran.
      log "compute-sanitizer $tool: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$logs/sanitizer-$tool.txt" | sort | uniq -c | tr -s ' ')"
      log "  ran $(grep -c '^\[       OK \]' "$logs/sanitizer-$tool.txt") tests: $(grep '^\[       OK \]' \
        "$logs/sanitizer-$tool.txt" | awk '{print $4}' | tr '\n' ' ')"
      if grep -q '^\[  SKIPPED \] [A-Za-z]' "$logs/sanitizer-$tool.txt"; then
        log "  skipped: $(grep '^\[  SKIPPED \] [A-Za-z]' "$logs/sanitizer-$tool.txt" | awk '{print $4}' | tr '\n' ' ')"
      fi
    else
      grep -q '^\[       OK \]' "$logs/sanitizer-$tool.txt" || log "compute-sanitizer $tool ran no test"
      failed+=("sanitizer $tool")
      log "compute-sanitizer $tool FAILED:"
      grep -E "ERROR SUMMARY|Invalid|Race|Barrier|FAILED|rank [0-9]" "$logs/sanitizer-$tool.txt" | head -20
    fi
  done
fi

# ---- 6. Device buffers: braid's kernels and NCCL in one run per collective (NVLS off: a shared host).
# ---- The PyTorch backend against the machine's own torch (python3 holds it there): braid_torch built in place,
# then tests/torch (CPU tests and the CUDA ones, which need 2 GPUs).
if wants torch; then
  if python3 -c "import torch, pytest" 2>/dev/null; then
    if (cd python && BRAID_BUILD_DIR=$build MAX_JOBS=$jobs python3 setup.py build_ext --inplace) \
        >"$logs/torch-build.log" 2>&1; then
      log "braid_torch built against torch $(python3 -c 'import torch; print(torch.__version__)')"
      if [ "${TORCH_TESTS:-1}" = 0 ]; then
        log "torch tests not run (TORCH_TESTS=0)"
      elif PYTHONPATH=$repo/python PATH=$build/bin:$PATH BRAID_CLI=$build/bin/braid NCCL_NVLS_ENABLE=0 \
          python3 -m pytest -q -p no:cacheprovider tests/torch >"$logs/torch-tests.log" 2>&1; then
        log "torch tests passed: $(tail -1 "$logs/torch-tests.log")"
      else
        failed+=("torch tests")
        log "torch tests FAILED:"
        tail -30 "$logs/torch-tests.log"
      fi
      # braid's libnccl.so.2 under PyTorch's own NCCL backend, built against the nccl.h of this torch's NCCL.
      if BRAID_BUILD_DIR=$build timeout 900 scripts/nccl-torch-check.sh python3 >"$logs/nccl-torch.log" 2>&1; then
        log "nccl-torch-check passed: $(grep -E '^nccl-torch-check:|passed|skipped' "$logs/nccl-torch.log" | tail -3 | tr '\n' ' ')"
      else
        failed+=("nccl-torch-check")
        log "nccl-torch-check FAILED:"
        tail -40 "$logs/nccl-torch.log"
      fi
    else
      failed+=("torch build")
      log "braid_torch build FAILED:"
      tail -30 "$logs/torch-build.log"
    fi
  else
    log "torch stage not run: python3 has no torch or pytest here"
  fi
fi

# ---- 7. PyTorch on CUDA tensors: dist.all_reduce through braid and NCCL in the same processes (float32 and
# bfloat16), then examples/ddp_train.py's step time under each backend (after the torch stage built braid_torch).
if wants torch-bench; then
  export PYTHONPATH=$repo/python:$repo/examples NCCL_NVLS_ENABLE=0
  for dtype in float32 bfloat16; do
    if PATH=$build/bin:$PATH timeout 300 python3 bench/torch_bench.py --device cuda -d $dtype -b "${TORCH_MIN:-8}" \
        -e "${TORCH_MAX:-128M}" -f "${TORCH_FACTOR:-4}" -n 20 --reps 3 --json "$logs/torch-cuda-$dtype.json" \
        >"$logs/torch-bench-$dtype.txt" 2>&1; then
      log "torch-bench $dtype: $logs/torch-cuda-$dtype.json"
    else
      failed+=("torch-bench $dtype")
      log "torch-bench $dtype FAILED:"
      tail -20 "$logs/torch-bench-$dtype.txt"
    fi
  done
  for backend in nccl braid; do
    PATH=$build/bin:$PATH timeout 180 python3 -m torch.distributed.run --nproc-per-node 2 examples/ddp_train.py \
      --backend $backend ${DDP_ARGS:---steps 20 --dim 1024 --layers 8 --batch 16 --context 256 --vocab 8192} \
      >"$logs/ddp-$backend.txt" 2>&1 || failed+=("ddp $backend")
    log "ddp $backend: median step $(grep -E '^step' "$logs/ddp-$backend.txt" | tail -n +3 | awk '{print $5}' | sort -n |
      awk '{a[NR]=$1} END {print (NR ? a[int((NR + 1) / 2)] : "none")}') ms"
  done
fi

# ---- 8. What the topology commands say about this machine, and its tuned device crossovers.
if wants hardware; then
  { "$build/bin/braid" detect && "$build/bin/braid" doctor && "$build/bin/braid" env &&
      timeout 180 "$build/bin/braid" tune --mem device --output "$logs/tune.env"; } >"$logs/hardware.txt" 2>&1 ||
    failed+=(hardware)
  log "hardware: $logs/hardware.txt"
fi

# ---- The fault matrix at scale on this machine's cores (scripts/fault-matrix.sh, shards at once): FAULT_RUNS process
# faults (default 0) and FAULT_PROXY_RUNS network faults through the proxy (default 1000), FAULT_JOBS shards.
if wants fault-matrix; then
  report=$logs/fault-matrix-$(hostname -s)-$(date +%F).jsonl
  # Each shard draws no new case after FAULT_SECONDS (the cases it finished are kept), so the call ends in time.
  if BRAID_FAULT_SECONDS=${FAULT_SECONDS:-300} JOBS=${FAULT_JOBS:-8} PROXY_RUNS=${FAULT_PROXY_RUNS:-1000} \
      BRAID_BUILD_DIR=$build timeout 480 \
      scripts/fault-matrix.sh "${FAULT_RUNS:-0}" "${FAULT_SEED:-20261201}" "$report" >"$logs/fault-matrix.txt" 2>&1; then
    log "fault-matrix: $report"
  else
    failed+=(fault-matrix)
    log "fault-matrix FAILED:"
  fi
  head -12 "$logs/fault-matrix.txt"
  grep -m 5 FAILED "$logs/fault-matrix.txt"
fi

# ---- The namespace bed (needs root, ip and tc): braid against Gloo and Open MPI on shaped links.
if wants netns-bench || wants netns-device; then
  # A machine without iproute2 gets it from the .deb files in .netdebs/ (scripts/fetch-gpu-debs.sh --net), unpacked
  # into a prefix of its own. Wrappers give ip and tc their libraries without handing them to the programs that
  # `ip netns exec` starts.
  if ! command -v ip >/dev/null && compgen -G ".netdebs/*.deb" >/dev/null; then
    net=/tmp/braid-nettools
    rm -rf "$net" && mkdir -p "$net/wrap"
    for deb in .netdebs/*.deb; do dpkg -x "$deb" "$net" || failed+=("unpack $deb"); done
    netlib=$net/lib/x86_64-linux-gnu:$net/usr/lib/x86_64-linux-gnu
    cat >"$net/wrap/ip" <<WRAP
#!/bin/sh
if [ "\$1" = netns ] && [ "\$2" = exec ]; then
  ns=\$3
  shift 3
  LD_LIBRARY_PATH=$netlib exec $net/bin/ip netns exec "\$ns" env LD_LIBRARY_PATH="\${LD_LIBRARY_PATH:-}" "\$@"
fi
LD_LIBRARY_PATH=$netlib exec $net/bin/ip "\$@"
WRAP
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s/sbin/tc "$@"\n' "$netlib" "$net" >"$net/wrap/tc"
    chmod +x "$net/wrap/ip" "$net/wrap/tc"
    export PATH=$net/wrap:$PATH
    log "iproute2 from .netdebs: $(ip -V 2>&1)"
  fi
  namespaces=yes
  if ! { ip netns add braid-probe-$$ 2>"$logs/netns-probe.txt" && ip netns del braid-probe-$$; }; then
    namespaces=no
    log "netns-bench not run: no network namespaces here: $(head -3 "$logs/netns-probe.txt" 2>/dev/null)"
  fi
  if [ $namespaces = yes ] && wants netns-device; then
    # GPU buffers between namespace hosts: braid against NCCL's socket transport (NETNS_DEVICE_RUNS: "HOSTS:RATE ...").
    for spec in ${NETNS_DEVICE_RUNS:-2:10gbit}; do
      IFS=: read -r hosts rate <<<"$spec"
      json=$logs/netns-device-${hosts}x1-$rate-$(hostname -s)-$(date +%F).json
      if BRAID_BUILD_DIR=$build timeout 400 scripts/netns-device-bench.sh "$hosts" "$rate" "$json" \
          >"$logs/netns-device-$hosts-$rate.txt" 2>&1; then
        log "netns-device $spec: $json"
        tail -30 "$logs/netns-device-$hosts-$rate.txt"
      else
        failed+=("netns-device $spec")
        log "netns-device $spec FAILED:"
        tail -20 "$logs/netns-device-$hosts-$rate.txt"
      fi
    done
  fi
  if [ $namespaces = yes ] && wants netns-bench; then
    for spec in ${NETNS_RUNS:-2:1:10gbit 4:1:2500mbit 2:1:10gbit:bf16}; do
      IFS=: read -r hosts per_host rate compress <<<"$spec"
      tag=${hosts}x$per_host-$rate${compress:+-$compress}
      json=$logs/netns-$tag-$(hostname -s)-$(date +%F).json
      if BRAID_COMPRESS=${compress:-} BRAID_BUILD_DIR=$build timeout 400 scripts/netns-bench.sh "$hosts" \
          "$per_host" "$rate" "$json" >"$logs/netns-$tag.txt" 2>&1; then
        log "netns-bench $spec: $json"
        tail -12 "$logs/netns-$tag.txt"
      else
        failed+=("netns-bench $spec")
        log "netns-bench $spec FAILED:"
        tail -20 "$logs/netns-$tag.txt"
      fi
    done
  fi
fi

if wants bench-device; then
  if [ -x "$build/bin/braid-bench-device" ]; then
    export NCCL_NVLS_ENABLE=0
    for spec in ${DEVICE_BENCH:-allreduce:float32 allreduce:bfloat16 allgather:float32 reducescatter:float32}; do
      coll=${spec%%:*} dtype=${spec##*:}
      json=$logs/nvlink-$coll-$dtype${DEVICE_TAG:+-$DEVICE_TAG}-$(date +%F).json
      if "$build/bin/braid-bench-device" --nranks "${DEVICE_RANKS:-2}" --collective "$coll" -d "$dtype" \
          -b "${DEVICE_MIN:-8}" -e "${DEVICE_MAX:-1G}" -f "${DEVICE_FACTOR:-2}" -n "${DEVICE_ITERS:-20}" -w 5 --reps 3 --json "$json" ${DEVICE_EXTRA:-} \
          >"$logs/bench-device-$coll-$dtype${DEVICE_TAG:+-$DEVICE_TAG}.txt" 2>&1; then
        log "bench-device $coll $dtype: $json"
      else
        failed+=("bench-device $coll $dtype")
        log "bench-device $coll $dtype FAILED:"
        tail -20 "$logs/bench-device-$coll-$dtype${DEVICE_TAG:+-$DEVICE_TAG}.txt"
      fi
    done
    # One results file for the run, and its plot where matplotlib is (the GPU machine's python3 has it).
    if compgen -G "$logs/nvlink-*-$(date +%F).json" >/dev/null &&
        python3 scripts/merge-results.py "$logs/results.json" "$logs"/nvlink-*-"$(date +%F)".json >/dev/null; then
      if python3 -c "import matplotlib" 2>/dev/null && python3 scripts/plot-results.py "$logs/results.json" \
          "$logs/results.png" >/dev/null; then
        log "bench-device results: $logs/results.json, plot $logs/results.png"
      else
        log "bench-device results: $logs/results.json (no plot: python3 has no matplotlib)"
      fi
    fi
  else
    log "bench-device not run: no $build/bin/braid-bench-device"
  fi
fi

# The device tool brings back only a few files from $OUT: PACK=1 folds everything into one archive.
pack() {
  if [ "${PACK:-0}" = 1 ] && [ -n "${OUT:-}" ]; then
    tar czf /tmp/gpu-check-logs.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/gpu-check-logs.tgz "$OUT/"
  fi
}
if ((${#failed[@]})); then
  log "FAILED: ${failed[*]}"
  pack
  exit 1
fi
log "all requested stages passed (${stages[*]}); logs in $logs"
pack
