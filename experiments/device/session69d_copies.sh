# Run here (not on the device), from the repository root, on branch frontier-rounds: makes
# devrun/ for call 69d (`carry=[".whl", "devrun"]`), each of 69c's two later changes alone on
# topk_rounds: topk_rounds = ec122ad (the frontier's first pick without a round, its last
# round without a head, ids by one addition, one tie count); topk_floats = db86d2b (that and
# the group bests found on the float scores); topk_tailscore = branch tail-score-only (that
# and the tail heads' scores from their keys, 135d706); the repository root has both.
set -eu
source experiments/device/copies.sh  # archive
rm -rf devrun && mkdir devrun
archive topk_rounds ec122ad
archive topk_floats db86d2b
archive topk_tailscore tail-score-only
grep -q "best_score = jnp.max(tile, axis=2)" devrun/topk_floats/pallas_kernels/product_key/topk_pallas.py
! grep -q "value = _score_of_key(state.top)" devrun/topk_floats/pallas_kernels/product_key/topk_pallas.py
grep -q "value = _score_of_key(state.top)" devrun/topk_tailscore/pallas_kernels/product_key/topk_pallas.py
! grep -q "best_score = jnp.max(tile, axis=2)" devrun/topk_tailscore/pallas_kernels/product_key/topk_pallas.py
du -sh devrun .whl
