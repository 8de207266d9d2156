# Run here (not on the device), from the repository root: makes devrun/ for call 53d
# (`carry=[".whl", "devrun"]`): m54 (main after session 53's merges of pair-own-writes and
# contract-tf32x3), d54 (branch dense-pair-grads: the backward's dense kernel sums the QK
# and solve gradients per slab), df54 (branch slot-lanes-forward, on d54: the
# pair-weight forward walks the entries in slot order) and, for call 54a, dfr54 (branch
# read-lanes-backward, on df54: QK's pair-weight backward on a lane per entry and per
# write too).
# Where the branches are missing (a new checkout), they are made again from
# experiments/device/branches/*.patch (`git format-patch` of each, on 0450b540646513c148b858bf3342c597cc993813).
set -eu
branch_from_patch() {  # branch_from_patch NAME BASE PATCH...: branch NAME = BASE + PATCHes
  git rev-parse -q --verify "refs/heads/$1" > /dev/null && return
  local name=$1 base=$2; shift 2
  rm -rf "/tmp/worktree_$name" && git worktree add -q -b "$name" "/tmp/worktree_$name" "$base"
  git -C "/tmp/worktree_$name" am -q "$@" && git worktree remove "/tmp/worktree_$name"
}
PATCHES="$(pwd)/experiments/device/branches"
branch_from_patch dense-pair-grads 0450b540646513c148b858bf3342c597cc993813 "$PATCHES/dense-pair-grads.patch"
branch_from_patch slot-lanes-forward dense-pair-grads "$PATCHES/slot-lanes-forward.patch"
branch_from_patch read-lanes-backward slot-lanes-forward "$PATCHES/read-lanes-backward.patch"
archive() {  # archive NAME TREE: devrun/NAME = TREE's code and tests
  rm -rf "devrun/$1" && mkdir -p "devrun/$1"
  git archive "$2" pallas_kernels sdm_jax maglev_jax experiments pyproject.toml tests \
    | tar -x -C "devrun/$1"
}
rm -rf devrun && mkdir devrun
archive m54 main
archive d54 dense-pair-grads
grep -q "def _dense_pair_grads" devrun/d54/pallas_kernels/sparse_delta/scan_pallas.py
archive df54 slot-lanes-forward
grep -q "def _dense_pair_grads" devrun/df54/pallas_kernels/sparse_delta/scan_pallas.py
grep -q "lanes=max(16, config.forward_block // chunk)" \
  devrun/df54/pallas_kernels/sparse_delta/pair_weights.py
archive dfr54 read-lanes-backward
grep -q "def _lanes_bwd_kernel" devrun/dfr54/pallas_kernels/sparse_delta/pair_weights.py
du -sh devrun .whl || true  # .whl: the wheels the device calls carry
