# Run here (not on the device), from the repository root: makes devrun/ for calls 55a and
# 55b (`carry=[".whl", "devrun"]`): m55 (main), p55 (branch plan-gathers: the plan's sort on
# one packed key; permutations with their inverses, so that they and their transposes are
# flat gathers, not XLA's batched scatters) and q55 (plan-flat-ids, on plan-gathers: the
# plan's integer part batched, its scatters flat and unique). Where a branch is missing (a
# new checkout keeps main only), it is made from experiments/device/branches/<name>.patch.
# plan-gathers is merged (ad9ce27); its patch adds the review commit 053ef23 (docstrings and
# gather_last's unique flag, the same compiled step) to the two commits timed as p55.
set -eu
source experiments/device/copies.sh  # archive, branch_from_patch
branch_from_patch plan-gathers db45910
branch_from_patch plan-flat-ids plan-gathers
rm -rf devrun && mkdir devrun
archive m55 main
archive p55 plan-gathers
grep -q "class Permutation" devrun/p55/pallas_kernels/sparse_delta/layout.py
archive q55 plan-flat-ids
grep -q "def scatter_last" devrun/q55/pallas_kernels/sparse_delta/layout.py
du -sh devrun .whl || true  # .whl: the wheels the device calls carry
