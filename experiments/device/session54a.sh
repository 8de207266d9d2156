# Session 54's first call (devrun from session54_copies.sh). DEADLINE=560, carry .whl and
# devrun. fr54's compiled pair-weight tests first (forward and both lane backwards against
# XLA's autodiff), then `sdm_small`'s step, one process each, two rounds: m54 (main), fr54
# (the slot-order forward and QK's lane backward), f54 (the forward alone), `gdn_small`
# each round for the ratio. About 330 s on a host like 53a's. The deadline cuts from the
# end.
source experiments/device/common.sh
step tests_fr54 100 devrun/fr54 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_pair_weights.py
GDN_TREE=m54 step_rounds "a b" m54 fr54 f54
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
