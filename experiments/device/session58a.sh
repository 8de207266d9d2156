# Issue 11's ratio at main, three rounds (session 57 had one round at 2.00x on an H100:
# 41.82 ms against `gdn_small`'s 20.91). DEADLINE=400, carry .whl and devrun (from
# session58_copies.sh); ask for kind nvidia-h200, the card (unmeasured there since
# session 50), and take what comes. Each round: `sdm_small`'s step at m58, then
# `gdn_small`'s, one process each (about 65 s a round on an H100); then m58's per-op profile
# (profile.log, hlo.tgz; read with `python -m experiments.hlo_launches --profile`). The
# deadline cuts from the end.
source experiments/device/common.sh
GDN_TREE=m58 step_rounds "a b c" m58
step_profile m58 100
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
