# Run here (not on the device), from the repository root: makes devrun/, the copies that
# calls 49a and 49b carry as one path (`carry=[".whl", "devrun"]`, about 40 MB; the carry
# limit is 8 paths, so the copies travel in one folder). Each copy is a tree's code and
# tests; some have one default edited. Each copy is remade from its commit or branch;
# devrun/cubins (session49_cubins.sh, run after this) is left as it is.
set -eu
source experiments/device/copies.sh  # archive
gather_warps() {  # gather_warps NAME N: the copy's KernelConfig.gather_warps default = N
  sed -i "s/^  gather_warps: int | None = None$/  gather_warps: int | None = $2/" \
    "devrun/$1/pallas_kernels/sparse_delta/scan_pallas.py"
  grep -q "gather_warps: int | None = $2$" "devrun/$1/pallas_kernels/sparse_delta/scan_pallas.py"
}
archive m49 4e6e590       # main's kernels before session 50's merges (as 8896f39, call 47a)
archive m50 main          # main after merging all-cuts and gather-warps (2 warps)
archive a48 all-cuts      # fold-sign + empty-tiles + entry-perms
archive f47 fold-sign
archive e47 empty-tiles
archive p47 entry-perms
archive r48 reload-rows   # on all-cuts
archive d48 dense-registers
archive a48c32 all-cuts
sed -i 's/sdm_chunk_size=16)/sdm_chunk_size=32)/' devrun/a48c32/experiments/configs/sdm_small.py
grep -q "sdm_chunk_size=32)" devrun/a48c32/experiments/configs/sdm_small.py
for warps in 2 1; do archive "g48w$warps" gather-warps; gather_warps "g48w$warps" "$warps"; done
archive s49w2 stack       # all-cuts + gather-warps + dense-registers, merged
gather_warps s49w2 2
du -sh devrun .whl  # all of it is carried as one path: under 64 MiB with .whl
