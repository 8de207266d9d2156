# Session 38, call e (issue 11): the SDM layer at config A (its top-k, S = 512 and k = 64,
# takes 2 rows per program since session 37) and at config B, with this session's
# top-k (the group clamp), as in session 35's call a.
source experiments/device/common.sh
LAYER="python -m experiments.bench_ops --op=sdm_layer --heads=1 --sdm_writes=64 --sdm_reads=64 --repeats=5 --impl=pallas"
step layer_a 150 . $LAYER --batch=2 --seq_len=8192 --sdm_slots=262144 --model_dim=2048 --chunk_size=32
step layer_b 100 . $LAYER --batch=16 --seq_len=2048 --sdm_slots=16384 --model_dim=512 --chunk_size=16
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
