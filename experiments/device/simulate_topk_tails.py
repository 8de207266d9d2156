"""Session 38 (issue 12): how often a 4-row top-k program would run its lazy tails if each
half ranked only its first m entries (the kernel ranks m = k // 2 = 16 at k = 32).

Gaussian scores, S = 512, k = 32, 2,000 programs. Per m, both halves summed: the final
rounds in which some row of the program takes a pair (r, 0) with r >= m (tail 0: each such
round runs a half round under `lax.cond`), and the same for pairs (r, 1) (a second tail).

  python3 experiments/device/simulate_topk_tails.py
"""
import numpy as np

SUB_KEYS, K, ROWS, PROGRAMS = 512, 32, 4, 2000


def tail_rounds(m: int, rng) -> tuple[float, float]:
  """Mean per program of the rounds taking tail 0 and tail 1 (see the module docstring)."""
  tail0 = tail1 = 0
  for _ in range(PROGRAMS):
    rounds = {0: [set(), set()], 1: [set(), set()]}  # partner rank -> per half, rounds
    for _ in range(ROWS):
      first = np.sort(rng.standard_normal(SUB_KEYS))[::-1][:K]
      second = np.sort(rng.standard_normal(SUB_KEYS))[::-1][:K]
      order = np.argsort(-(first[:, None] + second[None, :]).ravel(), kind="stable")[:K]
      for round_, pair in enumerate(order):
        i, j = divmod(pair, K)
        for half, (rank, partner) in enumerate(((i, j), (j, i))):
          if rank >= m and partner in rounds:
            rounds[partner][half].add(round_)
    tail0 += sum(len(r) for r in rounds[0])
    tail1 += sum(len(r) for r in rounds[1])
  return tail0 / PROGRAMS, tail1 / PROGRAMS


rng = np.random.default_rng(0)
for m in (16, 12, 11, 10, 8):
  print(m, "ranked per half; tail-0 runs (both halves) %.1f, rounds taking tail 1 %.1f"
        % tail_rounds(m, rng))
