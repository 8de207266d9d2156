# Run here (not on the device), after session49_copies.sh: builds phase 2's kernels of
# each copy named in TREES as XLA does for an H200 (`experiments.xla_build` through JAX's
# CUDA plugin, no GPU; GVENV and CUOBJDUMP as in WORKSPACE.md, "Running") at `sdm_small`'s
# layer shapes, and keeps one cubin per kernel (with XLA's launches of it, `cached_binaries`)
# under devrun/cubins/<tree>/, with
# devrun/cubins/variants.txt listing "<kernel> <tree>=<tree>/<kernel>.cubin@<warps>" for
# call 49c's replays (`replay_kernel.py --variant`). Each build must have the parameters of
# main's (m49's) kernel, which the replays' operands are recorded for; one that does not
# is left out, and said so; a build byte for byte one already kept (the tree does not
# change that kernel) is left out too. About 1-2 minutes a tree.
set -eu
GVENV=${GVENV:-/tmp/gvenv/bin/python}
CUOBJDUMP=${CUOBJDUMP:-/tmp/tvenv/lib/python3.11/site-packages/triton/backends/nvidia/bin/cuobjdump}
TREES=${TREES:-m49 a48 r48 d48 g48w2 g48w1}
KERNELS="fwd_gather_kernel fwd_dense_kernel fwd_scatter_kernel bwd_gather_kernel bwd_dense_kernel bwd_union_kernel"
params() { "$CUOBJDUMP" -elf "$1" | grep -c 'Ordinal :'; }
warps() {  # the kernel's required threads per program / 32
  local threads
  threads=$("$CUOBJDUMP" -elf "$1" | grep -A3 'EIATTR_REQNTID' | grep -o 'Value:[[:space:]]*0x[0-9a-f]*' | head -n 1 | grep -o '0x[0-9a-f]*')
  echo $(( threads / 32 ))
}
build() {  # build NAME TREE XLA_BUILD_FLAGS...: XLA's build of TREE's kernels, once
  local name=$1 tree=$2; shift 2
  if [ ! -d "/tmp/cubins_$name" ]; then
    # The reader of XLA's cache is main's, which writes each kernel's launches beside its
    # cubin (the branches' copies may predate it); the kernels are the tree's.
    cp experiments/cached_binaries.py "devrun/$tree/experiments/cached_binaries.py"
    ( cd "devrun/$tree" && PYTHONPATH=. "$GVENV" -m experiments.xla_build "$@" \
        --binaries_dir="/tmp/cubins_$name" > "/tmp/cubins_$name.log" 2>&1 )
  fi
}
keep() {  # keep NAME KERNEL: build NAME's cubin of KERNEL as a variant, unless it matches one kept
  local name=$1 kernel=$2 cubin kept
  cubin=$(ls "/tmp/cubins_$name"/*."$kernel".cubin | head -n 1)
  for kept in devrun/cubins/*/"$kernel".cubin; do
    if [ -f "$kept" ] && cmp -s "$cubin" "$kept"; then
      echo "same build: $name's $kernel and $kept"
      return
    fi
  done
  mkdir -p "devrun/cubins/$name" && cp "$cubin" "devrun/cubins/$name/$kernel.cubin"
  # XLA's launches of it (its dynamic shared memory, which the replay must give it)
  cp "$cubin.launches.json" "devrun/cubins/$name/$kernel.cubin.launches.json"
  echo "$kernel $name=$name/$kernel.cubin@$(warps "$cubin")" >> devrun/cubins/variants.txt
}
rm -rf devrun/cubins && mkdir -p devrun/cubins && : > devrun/cubins/variants.txt
for tree in $TREES; do
  build "$tree" "$tree" --op=sdm --batch=16 --seq_len=2048
  for kernel in $KERNELS; do
    reference=$(params "$(ls /tmp/cubins_m49/*."$kernel".cubin | head -n 1)")
    found=$(params "$(ls /tmp/cubins_"$tree"/*."$kernel".cubin | head -n 1)")
    if [ "$found" != "$reference" ]; then
      echo "left out: $tree's $kernel has $found parameters, m49's $reference"
      continue
    fi
    keep "$tree" "$kernel"
  done
done
# The top-k kernel at issue 12's shape (65,536 rows, S = 512, k = 32), main's tree: its
# default (exact order) and exact_order=false (11% faster on the H200, session 42).
for tiling in default exact_order=false; do
  name=topk_$(echo "$tiling" | tr "=;" "__")
  build "$name" m49 --op=topk --topk_rows=65536 --topk_sub_keys=512 --topk_k=32 \
    --tiling="$tiling"
  keep "$name" product_key_topk_kernel
done
cat devrun/cubins/variants.txt
du -sh devrun/cubins
