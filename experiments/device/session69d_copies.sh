# Run here (not on the device), from the repository root: makes devrun/ for calls 69d and
# 69e (`carry=[".whl", "devrun"]`), each of branch group-floats' two changes alone on top of
# ec122ad (the frontier's first pick without a round, its last round without a head, ids by
# one addition, one tie count; on main since session 69): topk_rounds = ec122ad;
# topk_floats = group-floats~1 (+ the group bests found on the float scores);
# topk_tailscore = branch tail-score-only (+ the tail heads' scores from their keys);
# topk_both = group-floats (both; call 69c's "root"). Branches from
# experiments/device/branches/*.patch where missing.
set -eu
source experiments/device/copies.sh  # archive, branch_from_patch
branch_from_patch group-floats ec122ad
branch_from_patch tail-score-only ec122ad
rm -rf devrun && mkdir devrun
archive topk_rounds ec122ad
archive topk_floats group-floats~1
archive topk_tailscore tail-score-only
archive topk_both group-floats
grep -q "best_score = jnp.max(tile, axis=2)" devrun/topk_floats/pallas_kernels/product_key/topk_pallas.py
! grep -q "value = _score_of_key(state.top)" devrun/topk_floats/pallas_kernels/product_key/topk_pallas.py
grep -q "value = _score_of_key(state.top)" devrun/topk_tailscore/pallas_kernels/product_key/topk_pallas.py
! grep -q "best_score = jnp.max(tile, axis=2)" devrun/topk_tailscore/pallas_kernels/product_key/topk_pallas.py
grep -q "value = _score_of_key(state.top)" devrun/topk_both/pallas_kernels/product_key/topk_pallas.py
grep -q "best_score = jnp.max(tile, axis=2)" devrun/topk_both/pallas_kernels/product_key/topk_pallas.py
du -sh devrun .whl
