# Run here (not on the device), from the repository root: makes devrun/ for call 69c
# (`carry=[".whl", "devrun"]`) and puts the repository root on branch group-floats, the tree
# 69c timed as "root" (return with `git checkout main` after the call): topk_main = 2cd0fd2
# (session 68's kernel); topk_rounds = ec122ad (the frontier's first pick without a round,
# its last round without a head, ids by one addition, one tie count: on main since session
# 69); group-floats (experiments/device/branches/group-floats.patch on ec122ad) adds the
# group bests found on the float scores and the tail heads' scores from their keys.
set -eu
source experiments/device/copies.sh  # archive, branch_from_patch
branch_from_patch group-floats ec122ad
rm -rf devrun && mkdir devrun
archive topk_main 2cd0fd2
archive topk_rounds ec122ad
git checkout -q group-floats
grep -q "store_pick(0," devrun/topk_rounds/pallas_kernels/product_key/topk_pallas.py
! grep -q "store_pick(0," devrun/topk_main/pallas_kernels/product_key/topk_pallas.py
grep -q "best_score = jnp.max(tile, axis=2)" pallas_kernels/product_key/topk_pallas.py
du -sh devrun .whl
