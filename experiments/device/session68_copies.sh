# Run here (not on the device), from the repository root: makes devrun/ for call 68a
# (`carry=[".whl", "devrun"]`): main's tree at BASE (the frontier that stores its
# candidates) in devrun/topk_main; the branch under test runs from the repository root.
set -eu
BASE=${BASE:-5adb527}
rm -rf devrun && mkdir -p devrun/topk_main
git archive "$BASE" pallas_kernels sdm_jax maglev_jax experiments pyproject.toml \
  | tar -x -C devrun/topk_main
du -sh devrun .whl
