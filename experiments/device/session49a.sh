# Session 49's first call; it replaces calls 48a-48c (never run: loans paused in sessions
# 47-49). DEADLINE=590, carry .whl and devrun (made by `bash
# experiments/device/session49_copies.sh` from main's checkout), run from main's checkout.
# First the compiled phase-2 tests of s49w2 (branch stack: all-cuts + gather-warps +
# dense-registers, gathers on 2 warps), which cover every kernel change below. Then
# `sdm_small`'s step, one process each, one round (the step's spread between rounds has
# been 0.01-0.1 ms, call 47a), the trees in the order of what each answers:
#   m49 main; a48 all-cuts (against m49); s49w2 the stack (against m49: do the parts add?);
#   g48w2 the gathers on 2 warps and d48 dense-registers (each against m49); r48
#   reload-rows and a48c32 all-cuts with chunks of 32 (each against a48); g48w1 the
#   gathers on 1 warp. The deadline cuts the tail; call 49b repeats what is close.
source experiments/device/common.sh
step tests_s49 110 devrun/s49w2 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 8 -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py tests/pallas_kernels/test_platform.py
step_rounds a m49 a48 s49w2 g48w2 d48 r48 a48c32 g48w1
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
