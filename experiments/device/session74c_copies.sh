# Run here (not on the device), from the repository root with branch frontier-prefetch checked
# out: makes devrun/ for call 74c (`carry=[".whl", "devrun"]`): topk_main = main, whose
# frontier loads the taken lane's next rank inside the round's chain; the root (the branch)
# holds each lane's successor head formed a round ahead; topk_ahead = branch halves-argmax-head
# (main with each half's head found by an argmax beside the max, not a min after it).
set -eu
source experiments/device/copies.sh  # archive
rm -rf devrun && mkdir devrun
archive topk_main main
archive topk_ahead halves-argmax-head
grep -q "after_key, after_id, after_second" pallas_kernels/product_key/topk_pallas.py
! grep -q "after_key, after_id, after_second" devrun/topk_main/pallas_kernels/product_key/topk_pallas.py
grep -q "ncu_stalls" devrun/topk_main/experiments/device/session74b.sh
du -sh devrun .whl
