# Run here (not on the device), from the repository root: makes devrun/ for call 53a
# (`carry=[".whl", "devrun"]`): m53 (main), s53 (branch scatter-warps with
# `scatter_warps=2`), t53 (branch union-tile16 with `backward_rows_tile=16` and
# `backward_rows_warps=2`: the union on 16-row tiles and 2 warps), o53 (branch
# pair-own-writes: A's pair-weight backward walking each write's segment in its own lane;
# call 53b), c53 (branch contract-tf32x3: the backward's C x C gradient contractions at
# TF32x3, call 53c), oc53 (branch own-writes-tf32x3: the two merged, call 53b). Branch
# pair-unroll
# (`writer_unroll=2`, a tie in session 52) is left out. Each copy fails loudly if its
# default was not edited.
set -eu
source experiments/device/copies.sh  # archive
default() {  # default NAME FILE FIELD TYPE FROM TO: the copy's FIELD default = TO
  local file="devrun/$1/pallas_kernels/sparse_delta/$2"
  sed -i "s/^  $3: $4 = $5$/  $3: $4 = $6/" "$file"
  grep -q "^  $3: $4 = $6$" "$file"
}
archive m53 main
archive s53 scatter-warps
default s53 scan_pallas.py scatter_warps "int | None" None 2
archive t53 union-tile16
default t53 scan_pallas.py backward_rows_tile "int | None" None 16
default t53 scan_pallas.py backward_rows_warps "int | None" None 2
archive o53 pair-own-writes
grep -q "own_writes=True" devrun/o53/sdm_jax/ops/sparse_delta/chunk.py
archive c53 contract-tf32x3
archive oc53 own-writes-tf32x3
grep -q "own_writes=True" devrun/oc53/sdm_jax/ops/sparse_delta/chunk.py
du -sh devrun .whl
