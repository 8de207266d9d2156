# Run here (not on the device), from the repository root, on branch frontier-rounds: makes
# devrun/ for call 69c (`carry=[".whl", "devrun"]`): topk_main = main at 2cd0fd2 (session
# 68's kernel); topk_rounds = ec122ad (the frontier's first pick without a round, its last
# round without a head, ids by one addition, one tie count); the repository root adds the
# group bests found on the float scores (db86d2b) and the tail heads' scores from their keys.
set -eu
source experiments/device/copies.sh  # archive
rm -rf devrun && mkdir devrun
archive topk_main 2cd0fd2
archive topk_rounds ec122ad
grep -q "store_pick(0," devrun/topk_rounds/pallas_kernels/product_key/topk_pallas.py
! grep -q "store_pick(0," devrun/topk_main/pallas_kernels/product_key/topk_pallas.py
grep -q "best_score = jnp.max(tile, axis=2)" pallas_kernels/product_key/topk_pallas.py
du -sh devrun .whl
