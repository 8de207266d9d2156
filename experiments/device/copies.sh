# Sourced here (not on the device) by the sessionNN*_copies.sh scripts, from the repository
# root: how they make the trees under devrun/ that the device calls carry.
# archive NAME TREE: devrun/NAME = TREE's code and tests (a commit or branch).
archive() {
  rm -rf "devrun/$1" && mkdir -p "devrun/$1"
  git archive "$2" pallas_kernels sdm_jax maglev_jax experiments pyproject.toml tests \
    | tar -x -C "devrun/$1"
}
# main_only NAME FILE PATTERN: devrun/ holding main alone as NAME, checked to hold PATTERN in
# FILE (the change the call is for: a stale main fails here, not on the device), then the
# sizes the call carries.
main_only() {
  rm -rf devrun && mkdir devrun
  archive "$1" main
  grep -q "$3" "devrun/$1/$2"
  du -sh devrun .whl || true
}
# branch_from_patch NAME BASE: branch NAME = BASE + experiments/device/branches/NAME.patch
# (`git format-patch`), made only where NAME is missing (a new checkout keeps main only).
branch_from_patch() {
  git rev-parse -q --verify "refs/heads/$1" > /dev/null && return
  rm -rf "/tmp/worktree_$1" && git worktree add -q -b "$1" "/tmp/worktree_$1" "$2"
  git -C "/tmp/worktree_$1" am -q "$(pwd)/experiments/device/branches/$1.patch" \
    && git worktree remove "/tmp/worktree_$1"
}
