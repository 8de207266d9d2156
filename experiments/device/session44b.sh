# Not run: session 45 timed L32 instead (session45a.sh) and removed candidate_lanes and
# group_chunk (5d1eda8); this script needs a tree before that (690f010).
# Session 44, call b (issue 12), for the next device session: the register fields at the
# other benchmarked shapes (65,536 rows), against the default. XLA's build here (registers,
# programs per SM): S = 256, k = 32: default 94 (21), L16 72 (28), L32 72 (28); S = 1,024,
# k = 32: 154 (12), 127 (16), 119 (17); S = 512, k = 64: 96 (21), 80 (25), 64 (32);
# S = 1,024, k = 64: 120 (17), 80 (25), 72 (28). Then bf16 scores, and the decode shape.
source experiments/device/common.sh
L16="candidate_lanes=16;group_chunk=4"
L32="candidate_lanes=32;group_chunk=4"
TK="python -m experiments.bench_ops --op=topk --repeats=20 --topk_rows=65536 --dtype=float32"
step t_s256 60 . $TK --topk_sub_keys=256 --topk_k=32 "--tilings=default,$L16,$L32,default"
step t_s1024 70 . $TK --topk_sub_keys=1024 --topk_k=32 "--tilings=default,$L16,$L32,default"
step t_k64 110 . $TK --topk_sub_keys=512,1024 --topk_k=64 "--tilings=default,$L16,$L32,default"
step t_bf16 60 . $TK --topk_sub_keys=512 --topk_k=32 --dtype=bfloat16 "--tilings=default,$L32,default"
step t_decode 90 . python -m experiments.bench_ops --op=topk --repeats=50 --topk_rows=8 --topk_sub_keys=256,512,1024 \
  --topk_k=32,64 --dtype=float32 "--tilings=default,$L32"
grep -o '"tiling": "[^"]*".*"fwd_back_to_back_ms": [0-9.]*' "$OUT"/t_*.log | sed 's/"block_rows.*"fwd_back/ fwd_back/' >> "$OUT/calls.log"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
