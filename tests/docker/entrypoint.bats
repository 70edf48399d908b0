#!/usr/bin/env bats
# The image's entrypoint (docker/entrypoint), outside any container: its modes, its refusals, the settings it takes
# from `braid env` for fixture machines, exit codes and signals. BRAID_BIN names the braid command to use.

setup() {
  root=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  entry=$root/docker/entrypoint
  fixtures=$root/tests/fixtures/topology
  export BRAID_BIN=${BRAID_BIN:-$root/build/bin/braid}
  export HOME=$BATS_TEST_TMPDIR
  unset MODE JUPYTER_TOKEN SSH_AUTHORIZED_KEYS CUDA_DEVICE_MAX_CONNECTIONS OMP_NUM_THREADS TORCH_CUDA_ARCH_LIST
}

@test "train runs the command with the settings braid env advises, and keeps its exit code" {
  BRAID_TOPOLOGY=$fixtures/h200x2-nvlink.json run "$entry" bash -c 'echo "conn=$CUDA_DEVICE_MAX_CONNECTIONS arch=$TORCH_CUDA_ARCH_LIST omp=$OMP_NUM_THREADS"; exit 3'
  [ "$status" -eq 3 ]
  [[ "$output" == *"conn=32 arch=9.0 omp=16"* ]]
}

@test "the summary names the GPU model, compute capability, links and the settings with their reasons" {
  BRAID_TOPOLOGY=$fixtures/dgx-h100-nvswitch.json run "$entry" true
  [ "$status" -eq 0 ]
  [[ "$output" == *"NVIDIA H100 80GB HBM3  sm_90"* ]]
  [[ "$output" == *"GPU links"* ]]
  [[ "$output" == *"NV18"* ]]
  [[ "$output" == *"BRAID_IFNAME='ibp0s0'"* ]]
  [[ "$output" == *"fastest interface that is up"* ]]
}

@test "a setting given to the container wins over the advice" {
  BRAID_TOPOLOGY=$fixtures/h200x2-nvlink.json OMP_NUM_THREADS=3 run "$entry" bash -c 'echo "omp=$OMP_NUM_THREADS"'
  [ "$status" -eq 0 ]
  [[ "$output" == *"omp=3"* ]]
}

@test "a machine without GPUs gets no GPU settings" {
  BRAID_TOPOLOGY=$fixtures/cpu-vm.json run "$entry" bash -c 'echo "arch=${TORCH_CUDA_ARCH_LIST:-none}"'
  [ "$status" -eq 0 ]
  [[ "$output" == *"arch=none"* ]]
}

@test "train without a command is refused" {
  BRAID_QUIET=1 run "$entry"
  [ "$status" -eq 2 ]
  [[ "$output" == *"MODE=train needs a command"* ]]
}

@test "jupyter refuses to start without a token" {
  MODE=jupyter BRAID_QUIET=1 run "$entry"
  [ "$status" -eq 2 ]
  [[ "$output" == *"refuses to start without JUPYTER_TOKEN"* ]]
}

@test "ssh refuses to start without a public key" {
  MODE=ssh BRAID_QUIET=1 run "$entry"
  [ "$status" -eq 2 ]
  [[ "$output" == *"passwords are never accepted"* ]]
}

@test "doctor exits with braid doctor's status" {
  MODE=doctor BRAID_TOPOLOGY=$fixtures/pcie-broken-p2p.json BRAID_QUIET=1 run "$entry"
  [ "$status" -eq 1 ]
  [[ "$output" == *"FAIL"* ]]
  MODE=doctor BRAID_TOPOLOGY=$fixtures/h200x2-nvlink.json BRAID_QUIET=1 run "$entry"
  [ "$status" -eq 0 ]
}

@test "an unknown mode is refused by name" {
  MODE=serve BRAID_QUIET=1 run "$entry" true
  [ "$status" -eq 2 ]
  [[ "$output" == *"MODE=serve is not one of"* ]]
}

@test "SIGTERM reaches the command (the entrypoint execs it)" {
  # fd 3 closed: bats waits for whatever still holds it.
  BRAID_TOPOLOGY=$fixtures/cpu-vm.json BRAID_QUIET=1 "$entry" \
    bash -c 'sleep 30 & trap "kill $!; exit 42" TERM; echo ready; wait' >"$BATS_TEST_TMPDIR/out" 3>&- &
  pid=$!
  for _ in $(seq 100); do grep -q ready "$BATS_TEST_TMPDIR/out" 2>/dev/null && break; sleep 0.05; done
  kill -TERM "$pid"
  status=0
  wait "$pid" || status=$?
  [ "$status" -eq 42 ]
}

@test "the entrypoint and the image script pass shellcheck" {
  command -v shellcheck >/dev/null || skip "shellcheck is not installed"
  shellcheck "$entry" "$root/scripts/container-image.sh"
}
