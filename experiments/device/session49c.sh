# Session 49's third call: the phase-2 kernels (issue 11) and the product-key top-k kernel
# at 65,536 rows, S = 512, k = 32 (issue 12), launch by launch, outside JAX. Nsight Compute
# died at attach to JAX (sessions 13-14), so `experiments.kernel_operands` records one
# chunk's launches (operands, and the cubins this GPU's XLA builds: "recorded") at
# `sdm_small`'s layer shapes in TREE (default m49: main), and `experiments/replay_kernel.py`
# replays each launch in a process without JAX (CuPy):
# 1. timed, every build of the kernel on the same buffers in turn: the recorded one and
#    devrun/cubins/variants.txt's (`session49_cubins.sh`, built here by XLA 0.10.2 from
#    the backlog's trees: union m49 / a48 / r48, scatter m49 / a48, gathers on 4 / 2 / 1
#    warps, dense m49 / d48, top-k default / exact_order=false). A faithful replay is near
#    the step profile's per-launch time (union about 37 us, forward gather 13.5, scatter
#    11.7, backward gather 9.8, the top-k 0.36 ms back to back);
# 2. the recorded build under ncu (--set full, clocks left alone).
# DEADLINE=590, carry .whl and devrun (session49_copies.sh, then session49_cubins.sh), run
# from main's checkout.
# Its replays faulted (session 50): they gave the kernels no dynamic shared memory, which
# `replay_kernels` (common.sh) now gives them.
source experiments/device/common.sh
replay_kernels "${TREE:-m49}" 60 90 bwd_union_kernel product_key_topk_kernel fwd_gather_kernel \
  fwd_scatter_kernel bwd_gather_kernel
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
