# Run here (not on the device), from the repository root: makes devrun/ for call 53a
# (`carry=[".whl", "devrun"]`): m53 (main), s53 (branch scatter-warps with
# `scatter_warps=2`), u53 (branch pair-unroll with `writer_unroll=2`; a tie in session 52,
# -0.13 ms inside main's spread). Each copy fails loudly if its default was not edited.
set -eu
archive() {  # archive NAME TREE: devrun/NAME = TREE's code and tests
  rm -rf "devrun/$1" && mkdir -p "devrun/$1"
  git archive "$2" pallas_kernels sdm_jax maglev_jax experiments pyproject.toml tests \
    | tar -x -C "devrun/$1"
}
default() {  # default NAME FILE FIELD TYPE FROM TO: the copy's FIELD default = TO
  local file="devrun/$1/pallas_kernels/sparse_delta/$2"
  sed -i "s/^  $3: $4 = $5$/  $3: $4 = $6/" "$file"
  grep -q "^  $3: $4 = $6$" "$file"
}
archive m53 main
archive s53 scatter-warps
default s53 scan_pallas.py scatter_warps "int | None" None 2
archive u53 pair-unroll
default u53 pair_weights.py writer_unroll int 1 2
du -sh devrun .whl
