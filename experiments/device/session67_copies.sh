# Run here (not on the device), from the repository root: makes devrun/ for call 67a
# (`carry=[".whl", "devrun"]`): the top-k kernel's stage cuts (ablate_topk.py); main runs
# from the repository root there.
set -eu
rm -rf devrun && mkdir devrun
python3 experiments/device/ablate_topk.py clamp h1 f1 h1f1
du -sh devrun .whl
