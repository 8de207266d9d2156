# Run here (not on the device), from the repository root: makes the devrun/ copies that
# calls 48a-48d carry, from the branches and commit they name (about 28 MB in all).
set -eu
archive() {  # archive NAME TREE: devrun/NAME = TREE's code and tests
  rm -rf "devrun/$1" && mkdir -p "devrun/$1"
  git archive "$2" pallas_kernels sdm_jax maglev_jax experiments pyproject.toml tests \
    | tar -x -C "devrun/$1"
}
archive m47 8896f39
archive f47 fold-sign
archive e47 empty-tiles
archive p47 entry-perms
archive a48 all-cuts
archive r48 reload-rows
archive d48 dense-registers
archive a48c32 all-cuts
sed -i 's/sdm_chunk_size=16)/sdm_chunk_size=32)/' devrun/a48c32/experiments/configs/sdm_small.py
for warps in 2 1; do
  archive "g48w$warps" gather-warps
  sed -i "s/^  gather_warps: int | None = None$/  gather_warps: int | None = $warps/" \
    "devrun/g48w$warps/pallas_kernels/sparse_delta/scan_pallas.py"
done
# every edit took
grep -q "sdm_chunk_size=32)" devrun/a48c32/experiments/configs/sdm_small.py
grep -q "gather_warps: int | None = 2$" devrun/g48w2/pallas_kernels/sparse_delta/scan_pallas.py
grep -q "gather_warps: int | None = 1$" devrun/g48w1/pallas_kernels/sparse_delta/scan_pallas.py
du -sh devrun/m47 devrun/f47 devrun/e47 devrun/p47 devrun/a48 devrun/r48 devrun/d48 devrun/a48c32 \
  devrun/g48w2 devrun/g48w1
