"""Session 38 (issue 12): how often a 4-row top-k program would run its lazy tails if each
half ranked only its first m entries (the kernel ranks m = k // 2 = 16 at k = 32).
Gaussian scores, S = 512, k = 32, 2,000 programs; per m: the final rounds in which some row
of the program takes a pair (r, 0) with r >= m (tail 0: each such round runs a half round
under `lax.cond`), both halves summed, and the same for pairs (r, 1) (a second tail).
  python3 experiments/device/simulate_topk_tails.py
"""
import numpy as np
rng = np.random.default_rng(0)
S, k, R, progs = 512, 32, 4, 2000
def runs(m):
  # per program: count final rounds where any row takes (r, 0) with r >= m (tail 0 of A), same for B
  # and (r, 1) with r >= m (tail 1), for both halves
  t0 = t1 = 0
  for _ in range(progs):
    rounds_t0 = [set(), set()]; rounds_t1 = [set(), set()]
    for row in range(R):
      a = np.sort(rng.standard_normal(S))[::-1][:k]; b = np.sort(rng.standard_normal(S))[::-1][:k]
      sums = (a[:, None] + b[None, :]).ravel()
      order = np.argsort(-sums, kind="stable")[:k]
      for rnd, idx in enumerate(order):
        i, j = divmod(idx, k)
        for h, (r, p) in enumerate(((i, j), (j, i))):
          if r >= m and p == 0: rounds_t0[h].add(rnd)
          if r >= m and p == 1: rounds_t1[h].add(rnd)
    t0 += sum(len(x) for x in rounds_t0); t1 += sum(len(x) for x in rounds_t1)
  return t0 / progs, t1 / progs
for m in (16, 12, 11, 10, 8):
  print(m, "static half rounds", m, "tail-0 cond runs (both halves) %.1f, tail-1 takes-rounds %.1f" % runs(m))
