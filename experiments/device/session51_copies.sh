# Run here (not on the device), from the repository root: makes devrun/ for call 51a
# (`carry=[".whl", "devrun"]`): m49 and m50 (main before and after session 50's merges),
# and the session-51 branches with their new field on: t51 (deepest-first,
# `deepest_first=True`), b51p4 (bwd-gather-parts, `backward_gather_parts=4`), c51 (stack51:
# both). Each copy fails loudly if its default was not edited.
set -eu
source experiments/device/copies.sh  # archive
default() {  # default NAME FIELD TYPE FROM TO: the copy's KernelConfig.FIELD default = TO
  local file="devrun/$1/pallas_kernels/sparse_delta/scan_pallas.py"
  sed -i "s/^  $2: $3 = $4$/  $2: $3 = $5/" "$file"
  grep -q "^  $2: $3 = $5$" "$file"
}
archive m49 4e6e590       # main's kernels before session 50's merges
archive m50 ded544b       # main before deepest-first merged (b92eb24)
archive t51 deepest-first
default t51 deepest_first bool False True
archive b51p4 bwd-gather-parts
default b51p4 backward_gather_parts int 1 4
archive c51 stack51
default c51 deepest_first bool False True
default c51 backward_gather_parts int 1 4
du -sh devrun .whl
