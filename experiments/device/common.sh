# Sourced by each device call script (experiments/device/sessionNN*.sh), run from the repository
# root on the device machine. DEADLINE (s from START) bounds the call.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
START=$(date +%s); DEADLINE=${DEADLINE:-560}
ROOT=$(pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || { echo "wheel install failed"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> "$OUT/calls.log" 2>&1
# step NAME LIMIT DIR CMD...: run CMD in DIR under min(LIMIT, time left), log to $OUT/NAME.log,
# the last 3 lines to calls.log.
step() {
  local name=$1 limit=$2 dir=$3; shift 3
  local left=$(( DEADLINE - ($(date +%s) - START) ))
  if (( left < 20 )); then echo "SKIP $name (left $left s)" >> "$OUT/calls.log"; return; fi
  (( limit > left )) && limit=$left
  local t0=$(date +%s)
  { echo "== $name ($dir)"; ( cd "$dir" && timeout -s TERM "$limit" "$@" ); } > "$OUT/$name.log" 2>&1
  local rc=$?; LAST_RC=$rc
  { echo "== $name rc=$rc $(( $(date +%s) - t0 )) s (limit $limit)"; tail -n 3 "$OUT/$name.log"; } >> "$OUT/calls.log"
}
# step_rounds "ROUNDS" TREE...: `sdm_small`'s training step in each devrun/TREE, one process
# each, alternating, once per name in ROUNDS ("a b c"), then collect_steps.
step_rounds() {
  local rounds=$1 round tree; shift
  for round in $rounds; do
    for tree in "$@"; do
      step "s_${tree}_$round" 75 "devrun/$tree" \
        python -m experiments.bench_ops --op=train_step --train_configs=sdm_small --repeats=10
    done
  done
  collect_steps
}
# collect_steps: each step run's (steps named s_*) back-to-back figure to calls.log, named
# by its log (experiments/device/step_table.py reads them), and the runs' logs appended to
# steps.log (a call returns at most 8 files).
collect_steps() {
  grep -Ho '"config": "[^"]*".*"step_back_to_back_ms": [0-9.]*' "$OUT"/s_*.log >> "$OUT/calls.log"
  cat "$OUT"/s_*.log >> "$OUT/steps.log"; rm -f "$OUT"/s_*.log
}
# copy NAME PYEDIT [FILE]: a copy of the tree under devrun/NAME with PYEDIT (python, acting on
# `s`, the text of FILE, by default pallas_kernels/sparse_delta/scan_pallas.py) applied; fails
# loudly if unchanged.
copy() {
  local name=$1 edit=$2 file=${3:-pallas_kernels/sparse_delta/scan_pallas.py}
  mkdir -p "devrun/$name" && cp -r pallas_kernels sdm_jax maglev_jax experiments pyproject.toml "devrun/$name/"
  python3 - "devrun/$name/$file" "$edit" <<'PY' >> "$OUT/calls.log" 2>&1
import sys
path, edit = sys.argv[1], sys.argv[2]
s = open(path).read(); before = s
exec(edit)
assert s != before, "edit changed nothing: " + edit
open(path, "w").write(s)
print("copy", path, "edited")
PY
}
DEFAULT='return KernelConfig(block_cols=block)'
# XLA's own build of what a step compiles: run the step under `$CACHE JAX_COMPILATION_CACHE_DIR=
# /tmp/jc/NAME`, then `binaries TGZ NAME...` pulls each cache's cubins through
# experiments.cached_binaries into /tmp/bin/NAME and tars them to $OUT/TGZ (read them here with
# experiments/triton_ir_stats.py, `--live` for where the registers go).
CACHE="env JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0"
binaries() {
  local tgz=$1 v; shift
  for v in "$@"; do
    step "bin_$v" 60 . python -m experiments.cached_binaries --from_cache="/tmp/jc/$v" --binaries_dir="/tmp/bin/$v"
  done
  ( cd /tmp && tar czf "$OUT/$tgz" bin ) 2>> "$OUT/calls.log"
}
