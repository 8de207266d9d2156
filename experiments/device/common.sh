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
# topk_figures NAME: the shape and the back-to-back figures of a `bench_ops --op=topk` step's
# log ($OUT/NAME.log: the kernel, `lax.top_k` over the 2S scores, the XLA path) on one line
# of calls.log.
topk_figures() {
  grep -ho '"sub_keys": [0-9]*\|"k": [0-9]*\|"fwd_back_to_back_ms": [0-9.]*\|"lax_top_k_2s_back_to_back_ms": [0-9.]*\|"xla_fwd_back_to_back_ms": [0-9.]*' \
    "$OUT/$1.log" | tr '\n' ' ' >> "$OUT/calls.log"; echo >> "$OUT/calls.log"
}
# The top-k calls' trees: TREE names devrun/topk_TREE, or "root", the repository root.
topk_dir() { if [ "$1" = root ]; then echo .; else echo "devrun/topk_$1"; fi; }
# topk_flagged NAME TREE SUB_KEYS K INPUTS TILINGS [FLAG...]: `time_topk_flagged` at 65,536
# rows in TREE (with any further flags, e.g. --repeats=300), logged as step f_NAME.
topk_flagged() {
  step "f_$1" 40 "$(topk_dir "$2")" python -m experiments.device.time_topk_flagged \
    --rows=65536 --sub_keys="$3" --k="$4" --inputs="$5" --tilings="$6" "${@:7}"
}
# topk_target TREE...: issue 12's shape (65,536 rows, S = 512, k = 32) on float32 and
# bf16-grid rows, default and `exact_order=false`, one process per TREE in the order given
# (name a tree twice, in opposite orders, for rounds), steps f_TREE_512_32_N.
topk_target() {
  local tree n=0
  for tree in "$@"; do
    topk_flagged "${tree}_512_32_$((++n))" "$tree" 512 32 normal,bf16_grid default,exact_order=false
  done
}
# topk_bench TREE [REPEATS]: `bench_ops --op=topk` at issue 12's shape (65,536 rows, S = 512,
# k = 32) in TREE over REPEATS calls (default 30), logged as step b_TREE (b_TREE_REPEATS
# for other counts), its figures on one line of calls.log.
topk_bench() {
  local repeats=${2:-30} name="b_$1" limit=60
  if (( repeats != 30 )); then name+="_$repeats"; limit=90; fi
  step "$name" "$limit" "$(topk_dir "$1")" python -m experiments.bench_ops --op=topk \
    --repeats="$repeats" --dtype=float32 --topk_rows=65536 --topk_sub_keys=512 --topk_k=32
  topk_figures "$name"
}
# topk_steady_state NAME TREE: issue 12's shape in TREE over 30 calls back to back, as every
# call since session 70 times it, and over 300, where the start and the final wait weigh
# 0.4% of the kernel's time instead of 4% (call 74d): `time_topk_flagged` on float32 and
# bf16-grid rows (steps f_NAME_512_32_30 and _300), `bench_ops` (b_TREE, b_TREE_300) and
# `profile_topk` (p_TREE: the kernel's own time in JAX's profile).
topk_steady_state() {
  topk_flagged "$1_512_32_30" "$2" 512 32 normal,bf16_grid default
  topk_flagged "$1_512_32_300" "$2" 512 32 normal,bf16_grid default --repeats=300
  topk_bench "$2"
  topk_bench "$2" 300
  step "p_$2" 40 "$(topk_dir "$2")" python -m experiments.device.profile_topk
}
# topk_other_shapes TREE...: issue 12's other benchmarked shapes at 65,536 rows (S = 256 and
# 1,024 at k = 32, S = 512 and 1,024 at k = 64), the default tiling on float32 rows, each
# TREE in turn per shape.
topk_other_shapes() {
  local shape tree
  for shape in "256 32" "1024 32" "512 64" "1024 64"; do
    for tree in "$@"; do
      topk_flagged "${tree}_${shape/ /_}" "$tree" ${shape% *} ${shape#* } normal default
    done
  done
}
# topk_tests TREE LIMIT: the compiled top-k tests (`-m gpu`, 8 workers) in TREE, logged as
# step t_tests, within LIMIT s.
topk_tests() {
  step t_tests "$2" "$(topk_dir "$1")" env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest \
    -q -n 8 -m gpu tests/pallas_kernels/product_key/test_topk.py
}
# topk_collect: the f_* and b_* step logs into topk.log (a call returns at most 8 files).
topk_collect() {
  cat "$OUT"/f_*.log "$OUT"/b_*.log > "$OUT/topk.log" 2> /dev/null
  rm -f "$OUT"/f_*.log "$OUT"/b_*.log
}
# step_rounds "ROUNDS" TREE...: `sdm_small`'s training step in each devrun/TREE, one process
# each, alternating, once per name in ROUNDS ("a b c"), then collect_steps. With GDN_TREE
# set (`GDN_TREE=m52 step_rounds ...`), each round ends with `gdn_small`'s step in
# devrun/$GDN_TREE (s_gdn_ROUND), for the issue-11 ratio. Each process gets 110 s: 31-35 s on
# most hosts, over 75 on call 53d's.
step_rounds() {
  local rounds=$1 round tree; shift
  for round in $rounds; do
    for tree in "$@"; do
      step "s_${tree}_$round" 110 "devrun/$tree" \
        python -m experiments.bench_ops --op=train_step --train_configs=sdm_small --repeats=10
    done
    if [ -n "${GDN_TREE:-}" ]; then
      step "s_gdn_$round" 110 "devrun/$GDN_TREE" \
        python -m experiments.bench_ops --op=train_step --train_configs=gdn_small --repeats=10
    fi
  done
  collect_steps
}
# step_profile TREE LIMIT: `sdm_small`'s per-op profile in devrun/TREE (profile.log) with its
# HLO ($OUT/hlo.tgz; read both with `python -m experiments.hlo_launches --profile`).
step_profile() {
  step profile "$2" "devrun/$1" python -m experiments.bench_ops --op=train_step \
    --train_configs=sdm_small --repeats=5 --top_ops=2000 --hlo_dir=/tmp/hlo
  [ -d /tmp/hlo ] && ( cd /tmp && tar czf "$OUT/hlo.tgz" hlo ) 2>> "$OUT/calls.log"
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
# replay_kernels TREE REPLAY_LIMIT NCU_LIMIT NCU_KERNEL...: phase 2's kernels at `sdm_small`'s
# layer shapes and the top-k's at 65,536 rows, S = 512, k = 32, outside JAX (Nsight Compute
# died at attach to JAX, sessions 13-14). `experiments.kernel_operands` records one chunk's
# launches in devrun/TREE with this GPU's cubins (ops.log); `experiments/replay_kernel.py`
# times each kernel's builds in turn on the same buffers, the recorded one and those of
# devrun/cubins/variants.txt (`session49_cubins.sh`; replay.log, a JSON line per kernel);
# then the recorded builds of NCU_KERNEL... run under ncu (ncu.log). Each build gets the
# dynamic shared memory XLA launches it with (`<cubin>.launches.json`); --shared_bytes,
# XLA 0.10.2's most for that kernel in any variant, serves only a cubin with none beside
# it (should this JAX's thunks not read as 0.10.2's do). Each log joins its file as it
# ends, so a call cut short returns few files.
PHASE2_KERNELS="bwd_union_kernel fwd_gather_kernel fwd_scatter_kernel bwd_gather_kernel fwd_dense_kernel bwd_dense_kernel"
replay_kernels() {
  local tree=$1 replay_limit=$2 ncu_limit=$3 kernel ncu; shift 3
  step ops 120 "devrun/$tree" python -m experiments.kernel_operands --out_dir=/tmp/ops \
    --batch=16 --seq_len=2048 --kernels="$(echo $PHASE2_KERNELS | tr ' ' ',')"
  step ops_topk 60 "devrun/$tree" python -m experiments.kernel_operands --op=topk \
    --out_dir=/tmp/ops --topk_rows=65536 --topk_sub_keys=512 --topk_k=32
  cat "$OUT/ops_topk.log" >> "$OUT/ops.log"; rm -f "$OUT/ops_topk.log"
  ls /tmp/ops/binaries/*.launches.json 2>/dev/null | wc -l \
    | sed 's/^/launch files beside the recorded cubins: /' >> "$OUT/calls.log"
  for kernel in bwd_union_kernel product_key_topk_kernel $(echo $PHASE2_KERNELS | cut -d' ' -f2-); do
    step "r_$kernel" "$replay_limit" "devrun/$tree" python3 experiments/replay_kernel.py \
      "/tmp/ops/$kernel" --shared_bytes="$(_shared_fallback "$kernel")" $(_variants "$kernel")
    cat "$OUT/r_$kernel.log" >> "$OUT/replay.log"; rm -f "$OUT/r_$kernel.log"
  done
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
  echo "ncu: ${ncu:-none}" >> "$OUT/calls.log"
  for kernel in "$@"; do
    step "n_$kernel" "$ncu_limit" "devrun/$tree" "$ncu" --clock-control none --set full \
      -k "regex:$kernel" --launch-skip 2 --launch-count 1 \
      python3 experiments/replay_kernel.py "/tmp/ops/$kernel" --warmup=2 --repeats=1 \
      --shared_bytes="$(_shared_fallback "$kernel")"
    cat "$OUT/n_$kernel.log" >> "$OUT/ncu.log"; rm -f "$OUT/n_$kernel.log"
  done
}
_variants() {  # --variant flags of kernel $1 from variants.txt, with absolute cubin paths
  grep "^$1 " devrun/cubins/variants.txt | cut -d' ' -f2 | sed "s|=|=$ROOT/devrun/cubins/|; s|^|--variant=|"
}
_shared_fallback() {  # the most shared memory XLA 0.10.2 gives kernel $1 in any variant build
  python3 -c "import glob, json, sys; print(max(r['shared_bytes'] for p in glob.glob('devrun/cubins/*/' + sys.argv[1] + '.cubin.launches.json') for r in json.load(open(p))))" "$1"
}
# topk_decode_tilings: issue 12's one losing shape (8 rows, S = 1,024, k = 64: the kernel
# 0.0550 ms at best against the XLA path's 0.0497, session 42e) with the tilings not yet
# tried there: the groups halves with the threshold final selection on 4, 2 and 1 warps and
# the frontier on 2, beside the default and the earlier best; twice, in opposite orders (a
# tiling measured later in a process ran up to 4% slower, session 38); then the threshold
# tiling's compiled cases. Written in session 48 (call 49b), first run by call 56d.
topk_decode_tilings() {
  local topk="python -m experiments.bench_ops --op=topk --repeats=50 --topk_rows=8 --dtype=float32 --topk_sub_keys=1024 --topk_k=64"
  local a="block_rows=1;num_warps=4" f2="block_rows=1;num_warps=2"
  local t4="block_rows=1;num_warps=4;final_select=threshold"
  local t2="block_rows=1;num_warps=2;final_select=threshold"
  local t1="block_rows=1;num_warps=1;final_select=threshold"
  step t_a 120 . $topk "--tilings=default,$a,$t4,$t2,$t1,$f2"
  step t_b 120 . $topk "--tilings=$f2,$t1,$t2,$t4,$a,default"
  step t_tests 70 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 3 -m gpu \
    tests/pallas_kernels/product_key/test_topk.py \
    -k "compiled_kernel_configs and num_warps-4_final_select-threshold"
  cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
}
