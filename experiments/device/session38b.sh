# Session 38, call b (issue 12): cheap variants of the default top-k at the target shape
# (S = 512, k = 32), in alternating processes: knobs (2 rows per program, groups of 32 or 8
# in the halves), copies with the candidates' groups of 8 or 32 (`_CANDIDATE_GROUP`), and
# copies whose half and final rounds run 2 or 4 to a loop iteration (`_fori_unrolled`);
# then the best of the copies beside the default at the other 65,536-row shapes.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
FILE=pallas_kernels/product_key/topk_pallas.py
UNROLL='
a = "  states = lax.fori_loop(0, rounds, round_, tuple(half.start() for half in halves))"
b = "  lax.fori_loop(0, k, round_, (best, best_slot, tail_carry, tail_head))"
assert a in s and b in s
s = s.replace(a, "  states = _fori_unrolled(rounds, round_, tuple(half.start() for half in halves))")
s = s.replace(b, "  _fori_unrolled(k, round_, (best, best_slot, tail_carry, tail_head))")
s = s.replace("def _groups_halves(", """def _fori_unrolled(n, body, carry, times=UNROLL):
  def several(i, carry):
    for u in range(times):
      carry = body(i * times + u, carry)
    return carry
  carry = lax.fori_loop(0, n // times, several, carry)
  for r in range(n - n % times, n):
    carry = body(r, carry)
  return carry


def _groups_halves(""", 1)
'
copy u2 "$UNROLL"'
s = s.replace("_NO_ID = np.iinfo", "UNROLL = 2\n_NO_ID = np.iinfo", 1)' $FILE
copy u4 "$UNROLL"'
s = s.replace("_NO_ID = np.iinfo", "UNROLL = 4\n_NO_ID = np.iinfo", 1)' $FILE
copy cg8 's = s.replace("_CANDIDATE_GROUP = 16", "_CANDIDATE_GROUP = 8")' $FILE
copy cg32 's = s.replace("_CANDIDATE_GROUP = 16", "_CANDIDATE_GROUP = 32")' $FILE
T="$TOPK --topk_sub_keys=512 --topk_k=32"
step t_new_a 60 . $T --tilings=default,block_rows=2,group_size=32,group_size=8
step t_u2_a 40 devrun/u2 $T --tilings=default
step t_cg8_a 40 devrun/cg8 $T --tilings=default
step t_u4_a 40 devrun/u4 $T --tilings=default
step t_cg32_a 40 devrun/cg32 $T --tilings=default
step t_new_b 40 . $T --tilings=default
step t_u2_b 40 devrun/u2 $T --tilings=default
step t_cg8_b 40 devrun/cg8 $T --tilings=default
step t_u4_b 40 devrun/u4 $T --tilings=default
step t_new_c 40 . $T --tilings=default
step t_new_o 90 . $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step t_u2_o 90 devrun/u2 $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step t_new_p 90 . $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=default
step t_u2_p 90 devrun/u2 $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=default
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
