"""Product-key top-k as a Pallas kernel (Triton on GPU; KERNELS.md 4).

Neither Triton nor Mosaic lowers a sort or `top_k`, so the kernel selects by rounds of
max-and-mask, `KernelConfig.block_rows` rows of scores per program (each reduction runs
along the row axis for all of them at once):

1. per half, k' = min(k, S) rounds: the largest untaken score, the lowest index among
   equal ones, taken; the pick of round r is stored at lane r of a working buffer, and
   after the rounds each candidate loads the pick of its rank in this half (registers
   cannot be gathered from; updating every candidate of rank r in each round, the first
   way, cost a pass over all candidates per round). `half_select` says how a round finds it:
   "scan" reduces over the whole half; "groups" keeps the best untaken entry of each group
   of `group_size` entries, reduces over those group bests and reloads (from memory) only
   the winner's group to find its next best, so a round touches S / group_size +
   group_size entries instead of S; both halves' rounds run in one loop, as two
   independent chains (`float_group_bests`, the default from S = 1,024 on: the first
   group bests found on the float scores, only they made keys; session 70);
2. the pair grid pruned to ranks (i + 1)(j + 1) <= k: pair (i, j) is beaten by every pair
   of lower or equal ranks in both halves, (i + 1)(j + 1) - 1 of them, so only those can be
   in the top k (119 pairs for k = 32, 280 for k = 64, instead of k'^2). The tournament
   and the threshold selections form them all first; blocks must have a power-of-two
   size, so they are split into parts of at least 32 lanes (`candidate_parts`: 280 ->
   256 + 32 lanes rather than one block of 512);
3. k rounds over the candidates' sums by (key, slot): the largest float32 sum, the lowest
   slot id among equal ones. `final_select="frontier"` (the default since session 40):
   lane i runs along the pairs (i, 0), (i, 1), ..., best first, so the best untaken
   candidate is the best of the lanes' heads; the heads are formed in registers from the
   pick logs, each lane's next only when it wins, so no candidate is stored
   (`_select_frontier`; until session 68 every candidate was formed and stored before the
   rounds and a round loaded the winner's successor: 0.352-0.366 ms against 0.333-0.336
   at S = 512, k = 32 on an H100, WORKSPACE.md, issue 12). Its first pick, the pair of
   ranks (0, 0), needs no round, and its last round forms no head (session 69: 0.324-0.329
   ms against 0.333-0.336 in the same call, an H100). After the "groups" halves the
   first half's picks stay in registers (lane r of [R, L] set in round r), so only the
   second half's log is written, one 128-byte line a row at S = 512, k = 32; and where a
   thread holds at most 4 of them (`_picks_in_registers`) the frontier's own picks stay
   in registers too, stored once a row after the rounds, and the logits come from them
   (session 77, an H100: 0.282-0.285 ms against 0.304-0.307 with both in memory).
   "tournament", like step 1's "groups": the candidates go to working memory, each group
   of 16 keeps its best untaken one, and a round reloads the winner's group
   (`_tournament`);
4. the contract orders slots by their exact sums (`topk_xla`), and (key, slot) differs
   from that order only among equal keys of different exact sums (rounding ties). Every
   sequence the rounds take from (a lane, a tail, a group's rest) is in the exact order.
   The frontier compares its heads in that order too, (key, residual, slot), so its k
   picks are the exact order's by construction; the residuals matter only among heads of
   one key of different exact sums, so a round computes them (from the heads' scores,
   kept in registers) only in a program where some row has two heads of the best key and
   some head's sum may be inexact in float32 (`_break_key_ties`; `_sums_exact` of the
   ranked scores holds on bf16-grid scores, the layer's with bf16 activations, where
   nearly every row ties). A residual computed for every new head was 9% slower than
   that at S = 512, k = 32 and 25% at k = 64 (H100, session 68); until session 64 each
   stored candidate's residual was stored beside its key: 6% slower (session 64). The tournament
   and the threshold selections compare by (key, slot), so their k picks are the exact
   order's unless two picks in a row have equal keys and are out of that order, or an
   untaken head has the last pick's key and ranks before it (`_exact_order_missed`: the
   residuals loaded only where keys tie); a program where either happens selects again
   by the exact order (`_exact_frontier`, under a `lax.cond`). On the H200 that check and
   fallback cost the frontier 12% (8% the fallback's code alone, never run; 4% its latency
   in the few programs that ran it), the in-round comparison 11% (0.362-0.366 against
   `exact_order=False`'s 0.327 ms at S = 512, k = 32: WORKSPACE.md, issue 12, session 42).
   Of 65,536 random normal rows there, 74 have two equal logits in a row and 7 an order
   other than (key, slot)'s. `KernelConfig.exact_order=False` compares by (key, slot) with
   no check: ids may then differ from the twin's where sums tie by rounding.

With `lazy_tail` (the default; "groups" halves, tournament or frontier), step 1 ranks only
the first k // 2 entries of each half: a rank i >= k // 2 pairs only with rank 0 of the
other half, so those ranks need no order among themselves. Each half's rest enters step 3
as one lazy candidate, its head (best untaken entry) plus the other half's best: a final
round compares the better of the two heads with the best of the other candidates, and a
round that takes it runs that half's next round (under a `lax.cond`: rounds that take no
tail skip it). A tail presents its entries in score order, which is the exact order of
their sums with the partner. (Until session 41 the contract compared rounded sums, and a
tail could then take the higher slot first among sums tied by rounding.)

`half_select="threshold"` (step 1) and `final_select="threshold"` (step 3) choose without
rounds (`_thresholds`, `_store_ranked`): the k-th largest key is built bit by bit, up to
32 counts in registers with no reload between them (they stop once exactly k keys reach
the cut); the chosen entries are packed by a running count and each is ranked by counting
the chosen entries that beat it.

Scores are compared as order-preserving int32 keys (`ordered_key`), so a taken entry is
simply the smallest int32, below every score (-inf included). A round's pick is the
largest key and the lowest id among equal keys: two reductions (`pick="max_min"`: the
max, then the min id among equals) or, where lanes are in id order (a half; a group),
one (`pick="argmax"`: Triton's argmax keeps the first maximal lane). Picks are recorded as
ids; their scores are reloaded from memory at the end, so sums and logits are formed from
the same float32 values as the XLA twin. A single int64 key (score, id) would make every
round one plain max, but JAX without 64-bit mode (its default) has no int64 inside a
kernel.

Registers. The rounds wait on reductions and reloads; more programs sharing a
multiprocessor could hide that latency, and registers bound them (65,536 per multiprocessor):
a one-warp program of at most 96 registers per thread runs 21 to a multiprocessor, one of
119 only 17. XLA builds the exact frontier at S = 512, k = 32 in 119, `exact_order=False`
in 96 (WORKSPACE.md, issue 12, session 43; with the residuals no longer stored, in 96
too, and in 115 with the check at formation of whether every sum is exact, session 64). A
program's peak is where many lanes are live at once, not in the rounds: a half's start
(`_Groups.start`: the [4, 32, 16] tile, 64 registers per thread at 4 rows and one warp)
and the candidates' formation (every part's keys, slots and residuals: 88 lanes in parts
of 64 and 32 there). In XLA's build of the
exact frontier, 112 registers are live at once in the formation, against at most 74 in
any loop (`experiments/triton_ir_stats.py --live`). Cutting those peaks does not buy
time: forming each candidate part as it is stored, in parts of 32 lanes, and finding the
groups' bests 4 entries at a time took XLA's build from 118 registers to 80 (25 programs
per SM), and the kernel from 0.359 to 0.388 ms on the H200 (session 45; session 38 found
the same for `exact_order=False` at 80 registers). Those two fields were removed; they
are in git at 690f010 (`candidate_lanes`, `group_chunk`). At k = 64 (two rows a program)
it does buy time: each part formed and stored before the next (`form_parts_together=
False`, the default there) took XLA's build from 96 registers to 80 at S = 512 and from
120 to 96 at S = 1,024, and the kernel from 0.846 to 0.769 ms and from 1.118 to 0.995 on
an H100, while at S = 512, k = 32 (96 registers against 118) it was 2.5% slower (session
63). Those figures are of the frontier that formed and stored its candidates; since
session 68 it forms none, and `form_parts_together` serves the tournament alone. XLA's
build of this frontier (JAX 0.10.2, `experiments.xla_build`, session 68): S = 512, k = 32
in 92 registers (21 programs per SM) and 2,776 instructions, against 115 and 3,472 for the
stored candidates (session 67); with the first pick stored without a round and the last
round peeled (session 69), 92 registers and 3,128 instructions, yet 8,091 issued per
program outside the tails' rounds against 8,502 (`triton_ir_stats.py --mix`); at k = 64,
S = 512, 4 rows a program take 128 registers and 2 rows 72, yet 4 rows ran faster
(0.737-0.741 ms against 0.771-0.775 on an H100); S = 1,024: 2 rows 92, 4 rows 149.

Where the time went at S = 512, k = 32 with that frontier (an H100, 65,536 rows, copies
with a stage's loop cut to one trip: `experiments/device/ablate_topk.py`, WORKSPACE.md,
issue 12, session 67): the frontier's later rounds about 31%, the halves' later rounds
about 25%, and 45% neither (the halves' start over all 2S scores, the candidates'
formation, the logits; reading the scores alone takes at least a fifth of the kernel's
time). No stage held most of it; the formation was the part session 68 removed.

Cache hints. Triton's `eviction_policy` on a load sets both its L1 eviction priority and
an L2 cache policy (`ld.global.L1::evict_*.L2::cache_hint` after a
`createpolicy.fractional.L2::evict_*`). The 21-24 programs a multiprocessor runs at once
(by registers) hold 16 KB of scores each at S = 512 (4 rows), more than its 256 KB of L1
and shared memory, and the 132 multiprocessors' programs together about 44 MB, most of the
50 MB L2, so which lines go first matters: the start tiles (which the groups' rounds
reload) and the pick logs (which the frontier reads every round) are loaded `evict_last`,
and the loads after the rounds that form the logits (the picks' ids, where the frontier
stored them, then both scores of each; read once) `evict_first`. On an H100 at 65,536
rows, S = 512, k = 32 (WORKSPACE.md, issue 12, session 76): 0.302-0.306 ms against
0.310-0.318 without hints in the same calls, and 1-3% ahead at the other four benchmarked
shapes. The logits' hint alone was 0.307, the
tiles' alone level with no hints, and the pick logs' with the logits' but without the
tiles' level too (the tiles then go first). Which cache level gains was not measured.

The pruned candidates' ranks (tournament, threshold) are a compile-time list passed as a
constant. The backward (a
`custom_vjp`) scatters d_logits to the two score entries of each selected slot.
Scores must not be NaN.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton
import jax.numpy as jnp
import numpy as np

from pallas_kernels import platform
from pallas_kernels.blocks import check_power_of_two_fields, next_power_of_two
from pallas_kernels.product_key.topk_xla import candidate_pairs, scores_cotangent, sum_residual

_NO_ID = np.iinfo(np.int32).max
_TAKEN = np.iinfo(np.int32).min  # the key of a taken (or padding) entry
# Eviction priorities (Triton's `eviction_policy`, L1 and L2; module docstring, "Cache hints"):
# lines a program reads again (its start tiles, which the groups reload; its pick logs) and
# lines it reads for the last time (the loads that form the logits after the rounds).
_READ_AGAIN = "evict_last"
_LAST_READ = "evict_first"

HALF_SELECTS = ("scan", "groups", "threshold")
FINAL_SELECTS = ("tournament", "frontier", "threshold")
_LAZY_FINAL_SELECTS = ("tournament", "frontier")  # the final selections that take tails
PICKS = ("max_min", "argmax")


class KernelConfig(NamedTuple):
  """Tiling of the GPU kernel and how its rounds pick (sizes are powers of two).

  Defaults: the fastest of 14 configs on one H200 at 65,536 rows, S = 512, k = 32 (0.62 ms
  forward; one row per program with whole-half scans, the previous default, 1.17 ms;
  WORKSPACE.md, issue 12), with `pick="argmax"` since session 35: back to back it was 0-4%
  faster than "max_min" at every shape where the groups tournament was the default (S =
  1,024, k = 32: 0.605 / 0.604 ms against 0.627 / 0.626; session 62, on an H100: argmax
  0.374 / 0.376 against 0.379 / 0.382 at S = 512, k = 32, though XLA builds "max_min"'s
  half rounds with 14 instructions fewer, but 0.844 / 0.843 against 0.834 / 0.834 at k =
  64), lazy tails since session 36
  (`lazy_tail`) and the frontier final selection since session 40. Where S <= 4k or the
  rows are few (`FEW_ROWS_MAX`) `default_config` takes threshold selections, 2 rows per
  program from k = 64 and S = 1,024 on (`TWO_ROWS_MIN_K`, `TWO_ROWS_MIN_SUB_KEYS`), and
  the group bests found on the float scores from S = 1,024 on
  (`FLOAT_GROUP_BESTS_MIN_SUB_KEYS`; session 70).
  """
  block_rows: int = 4         # rows of scores per program
  num_warps: int = 1
  half_select: str = "groups"  # "scan" | "groups" | "threshold" (module docstring, step 1)
  group_size: int = 16        # "groups": entries per group of a half
  pick: str = "argmax"        # "max_min" | "argmax": how a half's round finds its pick
  # How the k best candidates are chosen from the pruned pair grid (module docstring,
  # step 3): "frontier" or "tournament" (k rounds of max-and-mask), or "threshold"
  # (`_thresholds`). On the H200 at 65,536 rows, float32, back to back, fwd ms, frontier
  # against tournament, one process each (WORKSPACE.md, issue 12, session 40): S = 512, k
  # = 32: 0.328 / 0.324 against 0.355 / 0.353; S = 256, k = 32: 0.246 / 0.271; S = 1,024,
  # k = 32: 0.510 / 0.556; S = 512, k = 64: 0.743 / 0.767; S = 1,024, k = 64: 0.970 /
  # 0.978. Where every program falls back (scores built to tie): 0.440 / 0.430.
  final_select: str = "frontier"
  # Rank only the first k // 2 entries of each half; the rest, which pair only with rank 0
  # of the other half, enter the final rounds as one lazy candidate per half (`_Tail`).
  # Applies where half_select="groups" and final_select is "frontier" or "tournament" (the
  # other selections rank every entry). On the H200 at 65,536 rows, back to back, fwd ms
  # (session 36, mean of 4 processes at k = 32): S = 512, k = 32: 0.375 against 0.393; k =
  # 64: 0.840 / 0.937; S = 1,024, k = 64: 1.056 / 1.247 (WORKSPACE.md, issue 12); session
  # 41, with the frontier: 0.327 against 0.378 at S = 512, k = 32.
  lazy_tail: bool = True
  # Select in the contract's exact order (module docstring, step 4): the frontier compares
  # its heads by (key, residual, slot); the other final selections check their picks and
  # select again where they may miss it. False: by (key, slot) only; among different sums
  # that round to one float32 the lower slot may come first where the larger exact sum
  # should, so ids can differ from the XLA twin's there (7 of 65,536 random normal rows at
  # S = 512, k = 32); the logits are the same. On the H200 at 65,536 rows, S = 512, k = 32,
  # float32, back to back (WORKSPACE.md, issue 12, session 42): True 0.362-0.366 ms, False
  # 0.327, session 41's check and fallback 0.365-0.376. Session 63 (same shape, H200):
  # True 0.356 / 0.369, False 0.318 / 0.318; comparing by (key, slot) with the check and a
  # second launch selecting again the flagged programs (branch `exact-pass-relaunch`)
  # 0.432 / 0.432, though XLA built its first kernel in 96 registers against 118.
  exact_order: bool = True
  # How the tournament's candidate parts are formed (the frontier forms none since session
  # 68; these figures are of the frontier that did, then the default): True:
  # every part's picks and scores loaded and its fields formed, then all stored, so the
  # loads are in flight together; False: each part formed and stored before the next, so
  # one part's fields are live at a time (fewer registers: XLA's build at k = 64, S = 512:
  # 80 against 96, S = 1,024: 96 against 120). On an H100 at 65,536 rows, float32, fwd ms
  # back to back (WORKSPACE.md, issue 12, session 63): S = 512, k = 64: False 0.769
  # against 0.846, S = 1,024, k = 64: 0.995 against 1.118; S = 512, k = 32: 0.384-0.391
  # against 0.375-0.377 (96 registers against 118); S = 256, k = 32: 0.280 / 0.284;
  # S = 1,024, k = 32: 0.585 / 0.579.
  form_parts_together: bool = True
  # "groups": find each group's best on the float scores and make keys of the bests alone
  # (halves whose S is a power of two; padded halves make every entry a key, as with False).
  # `default_config` takes it from S = `FLOAT_GROUP_BESTS_MIN_SUB_KEYS` on. On an H100 at
  # 65,536 rows, fwd ms back to back, one process each (WORKSPACE.md, issue 12, call 70a;
  # with the tail heads' scores from their keys): S = 1,024, k = 32: True 0.470 against
  # 0.516; k = 64: 0.804 against 0.880; S = 512, k = 32: 0.338 / 0.345 against 0.322 / 0.320
  # (bf16-grid rows 0.335 / 0.345 against 0.319 / 0.319); S = 512, k = 64: 0.568 / 0.567;
  # S = 256, k = 32: 0.246 / 0.246. (Session 37, on the H200 with the tournament of then:
  # 15% slower at S = 1,024, k = 64, faster at k = 32.)
  float_group_bests: bool = False


# Threshold selections (both steps, one row per program) cost 31 bit counts per half
# whatever k; the groups' tournament costs rounds in proportion to k. So the threshold form
# is the faster where S is at most this many times k. On the H200 at 65,536 rows, float32,
# fwd ms (threshold against groups; WORKSPACE.md, issue 12, sessions 31-32): S = 128, k = 64
# (`sdm_small`'s shape) 0.75 against 1.45-1.60; S = 256, k = 64: 0.93 / 1.26; k = 128: 2.24
# / 2.89; S = 512, k = 128: 2.79 / 2.91; and the other way round at S = 256, k = 32: 0.54 /
# 0.51; S = 512, k = 32: 0.91 / 0.64 (k = 64: 1.32 / 1.37-1.39 forward, slower back to back
# and with the backward: a tie); S = 1,024, k = 32 and 64: 1.65 / 0.93 and 2.26 / 1.63.
THRESHOLD_MAX_SUB_KEYS_PER_K = 4
# From this k on, and this S on, the groups take 2 rows per program, not 4. With the frontier
# that forms its heads in registers (session 68; an H100 at 65,536 rows, back to back, fwd
# ms, two processes in opposite orders, WORKSPACE.md, issue 12): S = 1,024, k = 64: 2 rows
# 0.910 / 0.908 against 4 rows' 0.987 / 0.987; S = 512, k = 64: 0.771 / 0.775 against
# 0.741 / 0.739, so 4 rows there (S = 512 is the smallest S that takes the groups at k =
# 64: `THRESHOLD_MAX_SUB_KEYS_PER_K`). Earlier, with the tournament, 2 rows were the faster
# at both (the H200, session 37: S = 512, 0.770-0.775 against 0.829-0.831). At k = 32, 2
# rows were the slower (S = 512: 0.436 against 0.411, session 35). Untimed between 32 and
# 64, and above 64.
TWO_ROWS_MIN_K = 64
TWO_ROWS_MIN_SUB_KEYS = 1024
# Up to this many rows the threshold selections on one row per program whatever S and k:
# with few rows the time is one program's chain of dependent steps, and the threshold form's
# chain is the shortest; with many, the groups' 4 (or 2) rows a program do less work per row.
# On an H100, float32, fwd us, one process per (S, k) (WORKSPACE.md, issue 12, session 62):
# inside scans at 256-1,024 rows, S = 512 and 1,024, k = 32 and 64, the threshold form took
# 17.9-45.1 against the groups' 34.9-81.8 (and the XLA path's 36.7-147.2) at all twelve
# shapes; back to back at 2,048 rows it was ahead or level at all four (S = 512, k = 64:
# 47.7 against 77.0; S = 1,024, k = 32: 52.0 against 53.7), at 4,096 behind at k = 32 (S =
# 512: 61.4 against 49.4) and level at k = 64. Sessions 58-59 had set 128, timed at 8 and
# 128 rows.
FEW_ROWS_MAX = 2048
# From this S on the groups find their bests on the float scores (`KernelConfig.
# float_group_bests`): faster at S = 1,024, slower at 512, level at 256; untimed above 1,024
# (an S that is not a power of two keeps the keys whatever the flag).
FLOAT_GROUP_BESTS_MIN_SUB_KEYS = 1024


def default_config(sub_keys: int, k: int, rows: int | None = None) -> KernelConfig:
  """The tiling `product_key_topk` takes for S = sub_keys, k and `rows` rows of scores
  (None: many) when given none."""
  few_rows = rows is not None and rows <= FEW_ROWS_MAX
  if few_rows or sub_keys <= THRESHOLD_MAX_SUB_KEYS_PER_K * k:
    return KernelConfig(half_select="threshold", final_select="threshold", block_rows=1)
  config = KernelConfig(float_group_bests=sub_keys >= FLOAT_GROUP_BESTS_MIN_SUB_KEYS)
  if k >= TWO_ROWS_MIN_K and sub_keys >= TWO_ROWS_MIN_SUB_KEYS:
    return config._replace(block_rows=2)
  return config


def check_config(config: KernelConfig) -> None:
  """Raises ValueError naming the first field of `config` the kernel cannot take."""
  check_power_of_two_fields(config, ("block_rows", "num_warps", "group_size"))
  if config.num_warps > 32:
    raise ValueError(f"KernelConfig.num_warps must be at most 32, got {config.num_warps}")
  if config.half_select not in HALF_SELECTS:
    raise ValueError(f"KernelConfig.half_select must be one of {HALF_SELECTS}, got "
                     f"{config.half_select!r}")
  if config.final_select not in FINAL_SELECTS:
    raise ValueError(f"KernelConfig.final_select must be one of {FINAL_SELECTS}, got "
                     f"{config.final_select!r}")
  if config.pick not in PICKS:
    raise ValueError(f"KernelConfig.pick must be one of {PICKS}, got {config.pick!r}")


def ranked_per_half(k: int, per_half: int, config: KernelConfig) -> int:
  """How many of each half's `per_half` best entries the kernel ranks in order: all, or
  with `lazy_tail` (groups, frontier or tournament) those below k // 2 (a rank i >= k // 2
  pairs only with rank 0 of the other half: (i + 1)(j + 1) <= k leaves j = 0)."""
  lazy = (config.lazy_tail and config.half_select == "groups"
          and config.final_select in _LAZY_FINAL_SELECTS)
  if lazy and k >= 2:
    return min(per_half, k // 2)
  return per_half


def ordered_key(x: jax.Array) -> jax.Array:
  """float32 -> int32 with the same order (-0.0 and +0.0 one key); not for NaN.

  A non-negative float's bits already order as int32. A negative float's bits order
  backwards below zero, so flip all but its sign bit, then add one: x < y <=> key(x) <
  key(y), and -0.0 (int32's minimum, flipped to -1) lands on +0.0's key, 0, as the contract
  counts them equal. On the bits, not by `x == 0`, which a backend that treats subnormals
  as zero would also take for zero; three integer operations per entry (a shift, a fused
  and-xor, a subtraction) where a compare and select for -0.0 made it five."""
  bits = lax.bitcast_convert_type(x, jnp.int32)
  negative = bits >> 31  # -1 for a negative float, else 0
  return (bits ^ (negative & 0x7FFFFFFF)) - negative


def candidate_parts(count: int) -> tuple[int, ...]:
  """Power-of-two lane counts covering `count` candidates, each at least 32 lanes (one
  part below that): 119 -> (128,), 280 -> (256, 32)."""
  if count <= 32:
    return (next_power_of_two(count),)
  lanes = -(-count // 32) * 32
  return tuple(1 << bit for bit in reversed(range(lanes.bit_length())) if lanes >> bit & 1)


class _Rows(NamedTuple):
  """The rows of one program: `load` [R, 1] in bounds (a duplicate past the last row),
  `store` [R, 1] (past the last row for rows that are not there: masked and dropped)."""
  load: jax.Array
  store: jax.Array


def _load_scores(scores_ref, rows: _Rows, cols, width: int | None, eviction_policy=None):
  """float32 scores at columns `cols` (broadcast against the rows); -inf past `width`
  (None: every column is inside, no mask); eviction_policy: `_READ_AGAIN`, `_LAST_READ` or
  None (the default priority)."""
  if width is None:
    return pltriton.load(scores_ref.at[rows.load, cols],
                         eviction_policy=eviction_policy).astype(jnp.float32)
  inside = jnp.broadcast_to(cols < width, jnp.broadcast_shapes(rows.load.shape, cols.shape))
  values = pltriton.load(scores_ref.at[rows.load, cols], mask=inside, other=0,
                         eviction_policy=eviction_policy)
  return jnp.where(inside, values.astype(jnp.float32), -jnp.inf)


def _keys(scores_ref, rows: _Rows, offset: int, half_cols, sub_keys: int, eviction_policy=None):
  """Keys of the half entries `half_cols` (padding past S: taken)."""
  values = _load_scores(scores_ref, rows, offset + half_cols, offset + sub_keys, eviction_policy)
  return jnp.where(half_cols < sub_keys, ordered_key(values), _TAKEN)


def _beats(key, slot, other_key, other_slot):
  """Whether (key, slot) ranks before (other_key, other_slot): the larger key, the lower
  slot (or id) among equal keys: every selection's order."""
  return (key > other_key) | ((key == other_key) & (slot < other_slot))


def _first_max_lane(keys, pick: str):
  """keys [R, X] -> [R] the lane of the largest key, the first among equal ones."""
  if pick == "argmax":
    return jnp.argmax(keys, axis=1).astype(jnp.int32)
  lanes = lax.broadcasted_iota(jnp.int32, keys.shape, 1)
  best = jnp.max(keys, axis=1, keepdims=True)
  return jnp.min(jnp.where(keys == best, lanes, _NO_ID), axis=1)


class _PickLog(NamedTuple):
  """Where a half's rounds leave their picks: scratch [rows, 4, K'] int32 (K' >= rounds),
  lane r of row and plane `col_plane` (2 * half) holding round r's pick (its column in
  the half), of plane `key_plane` (2 * half + 1) its key (`ordered_key` of its score: the
  frontier forms its sums from those, `_select_frontier`), so that a half's two planes
  share lines. The groups and the scans log both as they pick (the groups before the
  frontier log the second half only: the first half's picks stay in registers);
  `_threshold_halves` logs the columns and `_log_keys` the keys after them."""
  scratch: jax.Array
  half: int
  interpret: bool

  @property
  def col_plane(self) -> int:
    return 2 * self.half

  @property
  def key_plane(self) -> int:
    return 2 * self.half + 1


def _log_pick(log: _PickLog, rows: _Rows, r, pick_col, pick_key=None):
  """Round r's pick [R, 1] stored at lane r of plane `col_plane`: one store per round,
  where updating every candidate of rank r in registers cost a pass over all candidates
  per round; its key (`ordered_key` of its score), where given, at lane r of plane
  `key_plane`."""
  lane = jnp.full(rows.store.shape, r, jnp.int32)
  live = rows.store < log.scratch.shape[0]
  pltriton.store(log.scratch.at[rows.store, log.col_plane, lane], pick_col, mask=live)
  if pick_key is not None:
    pltriton.store(log.scratch.at[rows.store, log.key_plane, lane], pick_key, mask=live)


def _picks_by_rank(log: _PickLog, rows: _Rows, rank):
  """After the rounds (and a barrier), [R, P] the pick of each of a candidate part's ranks
  (rank [1, P]; -1 = no candidate: index 0)."""
  return pltriton.load(log.scratch.at[rows.load, log.col_plane, jnp.maximum(rank, 0)],
                       mask=jnp.broadcast_to(rank >= 0, (rows.load.shape[0], rank.shape[1])),
                       other=0)


def _scan_half(scores_ref, rows: _Rows, offset: int, log: _PickLog, *, sub_keys: int,
               rounds: int, pick: str) -> None:
  """The half's `rounds` best indices (within the half), best first, into its pick log
  (module docstring, step 1, "scan")."""
  cols = jnp.arange(next_power_of_two(sub_keys), dtype=jnp.int32)[None, :]
  keys = _keys(scores_ref, rows, offset, cols, sub_keys)

  def round_(r, keys):
    pick_col = _first_max_lane(keys, pick)[:, None]  # lanes are the half's indices
    _log_pick(log, rows, r, pick_col, jnp.max(keys, axis=1, keepdims=True))
    return jnp.where(cols == pick_col, _TAKEN, keys)

  lax.fori_loop(0, rounds, round_, keys)


class _HalfState(NamedTuple):
  """A half's groups tournament between rounds: each group's best untaken entry and the
  head, the best of those (the next round's pick)."""
  best: jax.Array      # [R, G] keys (`_TAKEN`: the group is used up)
  best_col: jax.Array  # [R, G] their indices in the half
  top: jax.Array       # [R, 1] the head's key (`_TAKEN` once every entry is taken)
  pick_col: jax.Array  # [R, 1] the head's index in the half


class _Groups(NamedTuple):
  """The groups tournament over a half of `sub_keys` entries at column `offset` of the
  scores (module docstring, step 1, "groups")."""
  scores_ref: jax.Array
  rows: _Rows
  offset: int
  sub_keys: int
  group_size: int
  pick: str
  float_bests: bool

  @property
  def size(self) -> int:
    return min(self.group_size, next_power_of_two(self.sub_keys))

  @property
  def size_bits(self) -> int:
    return self.size.bit_length() - 1

  @property
  def padded(self) -> bool:
    """Whether the half's lanes (a power of two) run past its S entries; if not, no load
    or key needs a mask."""
    return next_power_of_two(self.sub_keys) != self.sub_keys

  def _group_lanes(self):
    groups = next_power_of_two(self.sub_keys) // self.size
    return jnp.arange(groups, dtype=jnp.int32)[None, :]  # [1, G]

  def keys_at(self, rows: _Rows, cols):
    """Keys of the half's entries `cols` (broadcast against the rows; padding: taken)."""
    if self.padded:
      return _keys(self.scores_ref, rows, self.offset, cols, self.sub_keys)
    return ordered_key(_load_scores(self.scores_ref, rows, self.offset + cols, None))

  def start(self) -> _HalfState:
    """Every group's best entry (ties: its first) and the head.

    With `float_bests` (halves without padding only) the group bests are found on the
    float scores and only they are made keys: float order is the keys' order (-0.0 and
    +0.0 equal in both; no NaN), and a key costs three integer operations per entry where
    a float max costs one. Otherwise every entry is made a key through `_keys`' masks
    (padding: `_TAKEN`)."""
    group_lanes = self._group_lanes()
    in_group = jnp.arange(self.size, dtype=jnp.int32)
    rows = self.rows._replace(load=self.rows.load[:, :, None])
    cols = group_lanes[:, :, None] * self.size + in_group              # [1, G, g]
    if self.float_bests and not self.padded:
      tile = _load_scores(self.scores_ref, rows, self.offset + cols, None, _READ_AGAIN)
      best_score = jnp.max(tile, axis=2, keepdims=True)                 # [R, G, 1]
      best = ordered_key(best_score[:, :, 0])
    else:
      tile = _keys(self.scores_ref, rows, self.offset, cols, self.sub_keys, _READ_AGAIN)
      best = jnp.max(tile, axis=2)                                       # [R, G]
      best_score = best[:, :, None]
    best_col = jnp.min(jnp.where(tile == best_score, in_group, _NO_ID), axis=2)
    return self._with_head(best, group_lanes * self.size + best_col)

  def _with_head(self, best, best_col) -> _HalfState:
    top = jnp.max(best, axis=1, keepdims=True)                         # [R, 1]
    # Groups hold increasing indices: the lowest index among equal group bests.
    pick_col = jnp.min(jnp.where(best == top, best_col, _NO_ID), axis=1)[:, None]
    return _HalfState(best, best_col, top, pick_col)

  def take(self, state: _HalfState, rows_taking=None) -> _HalfState:
    """Takes the head: reloads (from memory) only its group to find that group's next
    best, and finds the new head. rows_taking: [R, 1] the rows that take it (None: all);
    the others' state comes back the same (their group bests are kept, and the head is
    found again from them)."""
    in_group = jnp.arange(self.size, dtype=jnp.int32)
    # A shift, not `//`: int32 floor division by a constant costs a sign fix-up per round.
    group = jnp.right_shift(state.pick_col, self.size_bits)           # [R, 1]
    cols = group * self.size + in_group                                # [R, g]
    keys = self.keys_at(self.rows, cols)
    # Entries of the group after the pick in (key desc, index asc) order are untaken:
    # every earlier one was taken in an earlier round. That is key < top, or key == top
    # and col > pick: key - [col > pick] < top, one subtraction and one compare where
    # `_beats` takes four operations (a padding key, `_TAKEN`, may wrap to int32's
    # maximum; either way the where keeps it `_TAKEN`). XLA's build at S = 512, k = 32:
    # 4 ALU instructions fewer per round of the two halves (135 -> 131); on an H100, 1.4%
    # faster (WORKSPACE.md, issue 12, session 62).
    after = (cols > state.pick_col).astype(jnp.int32)
    keys = jnp.where(keys - after < state.top, keys, _TAKEN)
    new_best = jnp.max(keys, axis=1, keepdims=True)
    new_col = group * self.size + _first_max_lane(keys, self.pick)[:, None]
    won = self._group_lanes() == group
    if rows_taking is not None:
      won = won & rows_taking
    return self._with_head(jnp.where(won, new_best, state.best),
                           jnp.where(won, new_col, state.best_col))


def _groups_halves(scores_ref, rows: _Rows, logs, *, sub_keys: int, rounds: int, pick: str,
                   group_size: int, float_bests: bool, first_in_registers: bool = False):
  """`_scan_half`'s picks for both halves (offsets 0 and S; a log per half) by a tournament
  over groups of `group_size` consecutive entries (module docstring, step 1, "groups");
  returns each half's `_Groups`, its state before the rounds (its head: rank 0) and after
  them (its head: the pick of round `rounds`), and with `first_in_registers` the first
  half's picks (columns, keys) [R, L] by rank (L = next_power_of_two(rounds), lanes past
  `rounds` holding its last rank, as the log's readers clamp ranks), kept in registers
  instead of its log, and its rank 0's column [R, 1] (`_select_frontier`'s first_picks;
  else None). One loop runs both halves' rounds: two independent chains per
  iteration, so each one's reductions and reload overlap the other's (two loops, one per
  half, were 17% slower at k = 64 on the H200; WORKSPACE.md, issue 12, session 29)."""
  halves = tuple(_Groups(scores_ref, rows, offset, sub_keys, group_size, pick, float_bests)
                 for offset in (0, sub_keys))
  rank = jnp.minimum(jnp.arange(next_power_of_two(rounds), dtype=jnp.int32)[None, :],
                     rounds - 1)

  def round_(r, carry):
    states, first = carry
    logged = tuple(zip(logs, states))
    if first_in_registers:
      first = tuple(jnp.where(rank == r, new, old)
                    for new, old in zip((states[0].pick_col, states[0].top), first))
      logged = logged[1:]
    for log, state in logged:
      _log_pick(log, rows, r, state.pick_col, state.top)
    return tuple(half.take(state) for half, state in zip(halves, states)), first

  starts = tuple(half.start() for half in halves)
  first = ((jnp.zeros((rows.load.shape[0], rank.shape[1]), jnp.int32),) * 2
           if first_in_registers else ())
  states, first = lax.fori_loop(0, rounds, round_, (starts, first))
  first_picks = (*first, starts[0].pick_col) if first_in_registers else None
  return halves, starts, states, first_picks


# Candidates per group of the final selection's tournament.
_CANDIDATE_GROUP = 16
# The non-negative int32 bits a tournament candidate's slot and lane may share (`_select`).
_PACKED_ID_BITS = 31


class _Tail(NamedTuple):
  """A half's ranks from k // 2 on as one lazy candidate of the final tournament
  (`KernelConfig.lazy_tail`). Those ranks pair only with rank 0 of the other half (their
  (i + 1)(j + 1) <= k leaves j = 0), so they need no ranking among themselves: the
  candidate is the half's head (its best untaken entry) plus the partner, and only a
  round that takes it runs the half's next round (`_Groups.take`)."""
  half: _Groups
  partner_value: jax.Array  # [R, 1] float32: the other half's best score
  partner_col: jax.Array    # [R, 1] its index in that half

  @staticmethod
  def partnered(half: _Groups, other_start: _HalfState) -> "_Tail":
    """The tail of `half`, partnered with the other half's rank 0 (the head of its state
    before the rounds; its score from its key, as `candidate`'s own)."""
    return _Tail(half, _score_of_key(other_start.top), other_start.pick_col)

  def candidate(self, state: _HalfState):
    """(key, slot, residual) [R, 1] of the head's pair (`_TAKEN`, `_NO_ID`, 0 once the
    half is used up), from the same float32 values as the other candidates' sums: the
    head's score is its key's (`_score_of_key`: -0.0 comes back +0.0, which neither the
    sum's key nor its residual tells apart), not reloaded."""
    value = _score_of_key(state.top)
    used_up = state.top == _TAKEN
    half = self.half
    pair = ((state.pick_col, self.partner_col) if half.offset == 0  # the first half
            else (self.partner_col, state.pick_col))
    total = value + self.partner_value
    return (jnp.where(used_up, _TAKEN, ordered_key(total)),
            jnp.where(used_up, _NO_ID, pair[0] * half.sub_keys + pair[1]),
            jnp.where(used_up, 0.0, sum_residual(value, self.partner_value, total)))


def _advance_tail(tail: _Tail, head, took):
  """head: (state, key, slot, residual) of the tail; its next for the rows that took it (`took`
  [R, 1]) and the same for the others. The half's round runs only if some row took it.

  (Writing the new head into a group of its own in the tournament's memory instead, so
  the round's reload found it, halved pip Triton's instructions per common round but was
  no faster than no tails on the H200, where this form is 1-6% faster at k = 32 and
  10-16% at k = 64: WORKSPACE.md, issue 12, session 36. Running the tournament over the
  other candidates alone, then each tail's heads while they could still enter the top k
  and a merge of the three sorted lists, was 27% slower at S = 512, k = 32: session 37.)"""
  def run(head):
    state = tail.half.take(head[0], rows_taking=took)
    return (state, *tail.candidate(state))

  return lax.cond(_any_row(took), run, lambda head: head, head)


def _any_row(flags) -> jax.Array:
  """flags [R, 1] (or [R, P]) bool -> whether any is set (a scalar, the same for the
  program)."""
  return jnp.max(flags.astype(jnp.int32)) > 0


def _best_tail(tail_carry):
  """(key, slot, residual, which) [R, 1] of the best of the tails' heads in the exact
  order (`_beats_exactly`; which: its index in tail_carry)."""
  _, key, slot, residual = tail_carry[0]
  which = jnp.zeros(key.shape, jnp.int32)
  for i, (_, other_key, other_slot, other_residual) in enumerate(tail_carry[1:], start=1):
    better = _beats_exactly(other_key, other_residual, other_slot, key, residual, slot)
    key, slot, residual = (jnp.where(better, new, old) for new, old in
                           zip((other_key, other_slot, other_residual), (key, slot, residual)))
    which = jnp.where(better, i, which)
  return key, slot, residual, which


def _start_tails(tails):
  """(tail_carry, tail_head) before the final rounds: per tail (state, key, slot, residual)
  of its head's pair (`_Tail.candidate`), and the best of them (`_best_tail`; () without
  tails)."""
  tail_carry = tuple((state, *tail.candidate(state)) for tail, state in tails)
  return tail_carry, _best_tail(tail_carry) if tails else ()


def _tail_heads(tail_carry) -> tuple:
  """Per tail, (key, slot) [R, 1] of its head after the final rounds (`_Picked.heads`)."""
  return tuple((key, slot) for _, key, slot, _ in tail_carry)


class _Runs(NamedTuple):
  """Whether some round took the same key as the round before it ([R, 1]): only then can
  picks taken by (key, slot) be out of the exact order among themselves."""
  last_key: jax.Array
  seen: jax.Array

  @staticmethod
  def start(rows: _Rows) -> "_Runs":
    return _Runs(jnp.full(rows.load.shape, _TAKEN, jnp.int32),
                 jnp.zeros(rows.load.shape, jnp.bool_))

  def after(self, taken_key) -> "_Runs":
    return _Runs(taken_key, self.seen | (taken_key == self.last_key))


class _Picked(NamedTuple):
  """What a final selection that compares by (key, slot) leaves for `_exact_order_missed`:
  heads, per sequence of untaken candidates (a tournament group, a tail; or single
  candidates), (keys [R, X], slots [R, X]) of its first, which is at least as
  good in the exact order as any after it (`_TAKEN` keys: none); runs [R, 1] bool: some
  two picks in a row had equal keys (None: not known); missed: a scalar, the selection's
  own finding that it may have missed the exact order (None: no such finding)."""
  heads: tuple
  runs: jax.Array | None
  missed: jax.Array | None = None


def _store_candidates(part_fields, starts, rows: _Rows, candidates_ref, together: bool):
  """Stores each candidate part's fields [R, P] (part_fields(i): keys, slots) at lanes
  starts[i] + 0..P-1 of row `field` of candidates_ref [rows, F, T]. together
  (`KernelConfig.form_parts_together`): every part formed, then stored field by field;
  else each part formed and stored before the next."""
  live = rows.store < candidates_ref.shape[0]

  def store(start, field, values):
    lanes = int(start) + jnp.arange(values.shape[1], dtype=jnp.int32)[None, :]
    pltriton.store(candidates_ref.at[rows.store, field, lanes], values,
                   mask=jnp.broadcast_to(live, values.shape))

  if together:
    formed = [part_fields(part) for part in range(len(starts))]
    for field in range(len(formed[0])):
      for start, fields in zip(starts, formed):
        store(start, field, fields[field])
  else:
    for part, start in enumerate(starts):
      for field, values in enumerate(part_fields(part)):
        store(start, field, values)


def _against_tails(tail_head, top, pick_slot, top_residual=None):
  """(took_tail [R, 1], taken slot [R, 1]): whether the best of the tails' heads beats
  the candidates' winner (top, pick_slot), by (key, slot) or, given the winner's
  top_residual, in the exact order; and the slot the round takes."""
  tail_key, tail_slot, tail_residual, _ = tail_head
  if top_residual is None:
    took_tail = _beats(tail_key, tail_slot, top, pick_slot)
  else:
    took_tail = _beats_exactly(tail_key, tail_residual, tail_slot, top, top_residual,
                               pick_slot)
  return took_tail, jnp.where(took_tail, tail_slot, pick_slot)


def _advance_tails(tails, tail_carry, tail_head, took_tail, may_take=None):
  """The tails' heads after a round: the taken tail advances for the rows that took it
  (`_advance_tail`), all under one `lax.cond` on whether any row took a tail, or on
  `may_take` where given (a scalar that holds wherever some row took one, found earlier in
  the round; the rows that took none keep their heads either way)."""
  def advance(tails_now):
    tail_carry, (*_, tail_which) = tails_now
    tail_carry = tuple(_advance_tail(tail, head, took_tail & (tail_which == i))
                       for i, ((tail, _), head) in enumerate(zip(tails, tail_carry)))
    return tail_carry, _best_tail(tail_carry)

  if may_take is None:
    may_take = _any_row(took_tail)
  return lax.cond(may_take, advance, lambda x: x, (tail_carry, tail_head))


def _packs_into_ids(sub_keys: int, bits: int) -> bool:
  """Whether every slot (< S^2) shifted left by `bits` fits in `_PACKED_ID_BITS`."""
  return (sub_keys * sub_keys - 1).bit_length() + bits <= _PACKED_ID_BITS


def _pack_ids(slots, low, bits: int):
  """[R, P] slot << bits | low (low [1, P] < 2**bits; _NO_ID stays): the same order among
  distinct slots, and the low bits say something about the entry."""
  return jnp.where(slots == _NO_ID, _NO_ID, jnp.left_shift(slots, bits) | low)


def _select(candidate_part, starts, rows: _Rows, candidates_ref, idx_ref, k: int,
            sub_keys: int, interpret: bool, tails: tuple = (),
            together: bool = True) -> _Picked:
  """k rounds over the candidates (module docstring, step 3) as a tournament: part by part
  (candidate_part(i): keys [R, P] and slots [R, P] of part i; slots distinct where the
  key is not _TAKEN; lanes from `starts`), keys and slots are stored to candidates_ref
  [rows, 2, T] for `_tournament` (`_store_candidates`: every part formed first if
  `together`, else one part at a time). Where slot and lane fit in 31 bits together, a
  candidate's slot is stored as slot << lane_bits | lane, so the round's pick also names
  the winner's lane, and its group, without a reduction over the groups to find it."""
  total = candidates_ref.shape[-1]
  lane_bits = max(1, (total - 1).bit_length())
  with_lane = _packs_into_ids(sub_keys, lane_bits)

  def fields(part):
    keys, slots = candidate_part(part)
    if with_lane:
      lanes = int(starts[part]) + jnp.arange(slots.shape[1], dtype=jnp.int32)[None, :]
      slots = _pack_ids(slots, lanes, lane_bits)
    return keys, slots

  _store_candidates(fields, starts, rows, candidates_ref, together)
  platform.triton_barrier(interpret)
  picked = _tournament(rows, candidates_ref, idx_ref, k, tails,
                       id_bits=lane_bits if with_lane else 0, lane_in_id=with_lane)
  platform.triton_barrier(interpret)
  return picked


def _tournament(rows: _Rows, candidates_ref, idx_ref, k: int, tails: tuple, *, id_bits: int,
                lane_in_id: bool) -> _Picked:
  """k rounds of the stored candidates' tournament: candidates_ref [rows, 2, T] holds keys
  and ids (slot << id_bits | low bits, distinct where the key is not _TAKEN; lane_in_id:
  the low bits are the candidate's lane). Each group of `_CANDIDATE_GROUP` lanes keeps its
  best untaken candidate (largest key, lowest slot among equal keys); a round takes the
  best of the group bests, stores its slot at lane r of idx_ref and reloads only its
  group. (Masking and reducing over all T candidates each round, the first way, was 207 of
  a program's 381 loop instructions at S = 128, k = 64.) tails: per half, a `_Tail` and
  its state, lazy candidates beside the group bests. A round compares the group bests'
  winner with the best of the tails' heads only (kept beside them, `_best_tail`), and one
  `lax.cond` on whether any row took it advances the tail it came from for those rows
  (`_advance_tail`), so rounds that take none skip that work after one compare and one
  reduction over the rows. Returns the group bests and tails' heads after the rounds for
  `_exact_order_missed`."""
  total = candidates_ref.shape[-1]
  live = rows.store < candidates_ref.shape[0]
  size = min(_CANDIDATE_GROUP, total)
  assert total % size == 0, (total, size)  # parts are multiples of 32 lanes, or one part
  filled_groups = total // size
  groups = next_power_of_two(filled_groups)
  group_lanes = jnp.arange(groups, dtype=jnp.int32)[None, :]        # [1, G]
  in_group = jnp.arange(size, dtype=jnp.int32)

  def load_group(load_rows, lanes, masked=True):
    """masked=False: `lanes` must be in bounds (a group's lanes in order, which the
    compiler can then load as vectors)."""
    if not masked:
      return (pltriton.load(candidates_ref.at[load_rows, 0, lanes]),
              pltriton.load(candidates_ref.at[load_rows, 1, lanes]))
    at = jnp.minimum(lanes, total - 1)
    inside = jnp.broadcast_to(lanes < total, jnp.broadcast_shapes(load_rows.shape,
                                                                   lanes.shape))
    return (pltriton.load(candidates_ref.at[load_rows, 0, at], mask=inside, other=_TAKEN),
            pltriton.load(candidates_ref.at[load_rows, 1, at], mask=inside, other=_NO_ID))

  tile_keys, tile_slots = load_group(rows.load[:, :, None],
                                     group_lanes[:, :, None] * size + in_group)  # [R, G, g]
  best = jnp.max(tile_keys, axis=2)                                  # [R, G]
  best_slot = jnp.min(jnp.where(tile_keys == best[:, :, None], tile_slots, _NO_ID), axis=2)

  def round_(r, carry):
    best, best_slot, tail_carry, tail_head, runs = carry
    top = jnp.max(best, axis=1, keepdims=True)                      # [R, 1]
    pick = jnp.min(jnp.where(best == top, best_slot, _NO_ID), axis=1, keepdims=True)
    pick_slot = jnp.right_shift(pick, id_bits) if id_bits else pick
    taken_slot, taken_key = pick_slot, top
    if tails:  # the best of the group bests and of the tails' heads
      took_tail, taken_slot = _against_tails(tail_head, top, pick_slot)
      taken_key = jnp.where(took_tail, tail_head[0], top)
    pltriton.store(idx_ref.at[rows.store, jnp.full(rows.store.shape, r, jnp.int32)],
                   taken_slot, mask=live)
    if lane_in_id:
      group = jnp.right_shift(pick & ((1 << id_bits) - 1), size.bit_length() - 1)
    else:
      group = jnp.min(jnp.where(best_slot == pick, group_lanes, groups), axis=1,
                      keepdims=True)                                 # slots are distinct
    # The winner's group, clamped in bounds: only once every candidate is taken can it
    # name a group past them, and then the pick is _NO_ID and top _TAKEN, so nothing
    # loaded counts as untaken below. Clamping the group, not each lane, keeps the lanes
    # contiguous (the lanes' clamps made XLA's build load them one by one).
    group = jnp.minimum(group, filled_groups - 1)
    group_keys, group_slots = load_group(rows.load, group * size + in_group,
                                         masked=False)                # [R, g]
    # The group's members after the pick in (key desc, slot asc) order are untaken:
    # every earlier one was taken in an earlier round.
    group_keys = jnp.where(_beats(top, pick, group_keys, group_slots), group_keys, _TAKEN)
    new_best = jnp.max(group_keys, axis=1, keepdims=True)
    new_slot = jnp.min(jnp.where(group_keys == new_best, group_slots, _NO_ID), axis=1,
                       keepdims=True)
    won = group_lanes == group
    if tails:  # rows that took a tail's head keep their group bests
      won = won & ~took_tail
      tail_carry, tail_head = _advance_tails(tails, tail_carry, tail_head, took_tail)
    return (jnp.where(won, new_best, best), jnp.where(won, new_slot, best_slot),
            tail_carry, tail_head, runs.after(taken_key))

  best, best_slot, tail_carry, _, runs = lax.fori_loop(
      0, k, round_, (best, best_slot, *_start_tails(tails), _Runs.start(rows)))
  best_slot = jnp.right_shift(best_slot, id_bits) if id_bits else best_slot
  return _Picked(((best, best_slot),) + _tail_heads(tail_carry), runs.seen)


def _sums_exact(*values) -> jax.Array:
  """Whether every sum of two of the float32 `values` (arrays of any shapes) is exact in
  float32 (a scalar; False also where some value is infinite). Sufficient, not necessary:
  each value is a multiple of its lowest significand bit's weight, so of the smallest such
  weight q among them, and so is every sum; a multiple of q below 2^24 q in magnitude is a
  float32. The scores on bf16's grid that the layer passes with bf16 activations pass it
  wherever the values span fewer than 16 binades."""
  def lowest_bit(value):  # the weight of |value|'s lowest set significand bit (0: inf)
    bits = lax.bitcast_convert_type(jnp.abs(value), jnp.int32)
    without = lax.bitcast_convert_type(bits - (bits & -bits), jnp.float32)
    power_of_two = (bits & 0x7FFFFF) == 0  # the lowest set bit is the exponent's
    return jnp.where(value == 0, jnp.inf,
                     jnp.where(power_of_two, jnp.abs(value), jnp.abs(value) - without))

  largest = functools.reduce(jnp.maximum, (jnp.max(jnp.abs(v)) for v in values))
  finest = functools.reduce(jnp.minimum, (jnp.min(lowest_bit(v)) for v in values))
  # 2^24 q may overflow to inf: then the test holds, as it should.
  return (largest < jnp.inf) & (2 * largest < jnp.float32(2.0**24) * finest)


def _score_of_key(key):
  """`ordered_key`'s inverse: int32 keys -> their float32 scores (key 0: +0.0)."""
  negative = key >> 31  # -1 for a negative score's key, else 0
  return lax.bitcast_convert_type((key + negative) ^ (negative & 0x7FFFFFFF), jnp.float32)


# The most picks a thread may hold in registers through the frontier's rounds
# (`_picks_in_registers`).
_PICKS_PER_THREAD_MAX = 4


def _picks_in_registers(k: int, config: KernelConfig) -> bool:
  """Whether the frontier keeps a program's picks ([block_rows, next_power_of_two(k)]
  int32) in registers, at most `_PICKS_PER_THREAD_MAX` a thread, and stores them once
  after its rounds, where a store a round wrote 4 bytes of a row at a time and the logits
  reloaded them. An H100 at 65,536 rows (WORKSPACE.md, issue 12, session 77): 4 a thread
  at S = 512, k = 32: 0.283-0.285 ms against 0.294 stored; at S = 256 and 1,024, k = 32
  and at S = 1,024, k = 64 (2 rows), 1-3% faster; 8 a thread (S = 512, k = 64, 4 rows)
  took XLA's build from 95 registers to 114 (21 programs per multiprocessor to 17) and
  the kernel from 0.531 ms to 0.579."""
  per_thread = config.block_rows * next_power_of_two(k) // (32 * config.num_warps)
  return per_thread <= _PICKS_PER_THREAD_MAX


def _select_frontier(rows: _Rows, logs, idx_ref, k: int, sub_keys: int, ranked: int,
                     interpret: bool, tails: tuple = (), exact: bool = True,
                     first_picks=None, picks_in_registers: bool = False) -> jax.Array | None:
  """The k best candidates' slots, best first, to idx_ref (module docstring, step 3,
  `final_select="frontier"`), from the halves' pick logs: lane i < `ranked` runs along
  the pairs (i, 0), (i, 1), ... with (i + 1)(j + 1) <= k and j < ranked, which come in the
  exact order (the second half is ranked, and its equal scores lowest index first), as do
  a tail's, so the best untaken candidate is the best of the lanes' and tails' heads.

  The heads are formed in registers, never stored: each lane holds its first-half score,
  and a round that takes lane i's head loads the second half's next rank (its column and
  key, from the pick log) and forms the lane's next sum. A round is one max and one min
  among equal keys over the heads ([R, L]), one load per row and the new head's sum.
  Where slot and rank fit in 31 bits together, a head's id is slot << bits | j, so the
  pick names the rank to load; else a third reduction finds it.

  The first pick is always the pair of ranks (0, 0), whose two scores are each half's
  largest (and lowest index among equal ones): every other pair's exact sum is at most
  its sum, and any pair of equal sum has those same two scores, at columns no lower. So
  it is stored without a round, and the last round forms no new head.

  exact: heads are compared in the exact order, so the k picks are the exact order's by
  construction (module docstring, step 4): among equal keys the largest residual wins
  (`_break_key_ties`, from the heads' scores, kept in registers), needed only where some
  head's sum may be inexact (`_sums_exact` of the ranked scores, once). False: by (key,
  slot) (`KernelConfig.exact_order=False`). first_picks: the first half's (columns, keys)
  [R, L] by rank, in registers (`_groups_halves`), and its rank 0's column [R, 1]; or None:
  from its pick log. picks_in_registers (`_picks_in_registers`): the picks [R, K'] (K' =
  next_power_of_two(k); lanes past k unused) kept in registers through the rounds, stored
  to idx_ref once and returned; else each round stores its pick, and None is returned."""
  live = rows.store < idx_ref.shape[0]
  lanes = next_power_of_two(ranked)
  lane = jnp.arange(lanes, dtype=jnp.int32)[None, :]                    # [1, L]
  lengths = jnp.where(lane < ranked, jnp.minimum(k // (lane + 1), ranked), 0)
  shape = (rows.load.shape[0], lanes)
  rank_bits = max(1, (ranked - 1).bit_length())
  packed = _packs_into_ids(sub_keys, rank_bits)
  scratch = logs[0].scratch

  def logged(plane, rank):  # a pick log's plane (`_PickLog.col_plane`, `key_plane`) at `rank`
    return pltriton.load(scratch.at[rows.load, plane, rank], eviction_policy=_READ_AGAIN)

  first_log, second_log = logs

  out_lanes = jnp.arange(next_power_of_two(k), dtype=jnp.int32)[None, :]

  def store_pick(r, slot, picks):
    """slot [R, 1] at lane r of the picks: in registers ([R, K']), or stored to idx_ref
    (picks: ())."""
    if picks_in_registers:
      return jnp.where(out_lanes == r, slot, picks)
    pltriton.store(idx_ref.at[rows.store, jnp.full(rows.store.shape, r, jnp.int32)], slot,
                   mask=live)
    return picks

  platform.triton_barrier(interpret)  # the pick logs, before their loads
  ranks = jnp.broadcast_to(jnp.minimum(lane, ranked - 1), shape)
  first_rank = jnp.zeros(rows.load.shape, jnp.int32)
  if first_picks is None:
    first_picks = (logged(first_log.col_plane, ranks), logged(first_log.key_plane, ranks),
                   logged(first_log.col_plane, first_rank))
  first_col, first_key, first_col_at_zero = first_picks                 # [R, L], [R, 1]
  first_value = _score_of_key(first_key)
  some_inexact = (~_sums_exact(first_value, _score_of_key(logged(second_log.key_plane, ranks)))
                  if exact else None)
  # Each lane's share of its heads' ids, so that forming an id is one addition per lane:
  # (first * S + second) << bits | j = (first * S << bits) + (second << bits | j).
  lane_id_base = first_col * sub_keys
  if packed:
    lane_id_base = jnp.left_shift(lane_id_base, rank_bits)

  def heads(rank):
    """(key, id, second-half score) [R, L] of each lane's pair with the second half's
    `rank` [R, 1] (`_TAKEN`, `_NO_ID` past the lane's end)."""
    at = jnp.minimum(rank, ranked - 1)
    second_col = logged(second_log.col_plane, at)
    second_value = _score_of_key(logged(second_log.key_plane, at))
    inside = rank < lengths
    row_id = jnp.left_shift(second_col, rank_bits) | rank if packed else second_col
    return (jnp.where(inside, ordered_key(first_value + second_value), _TAKEN),
            jnp.where(inside, lane_id_base + row_id, _NO_ID),
            jnp.broadcast_to(second_value, shape))

  def round_(r, carry, advance=True):
    """Round r: the best head taken and stored; with `advance`, the taken lane's (or
    tail's) next head formed (the last round's would go unused)."""
    picks, head_key, head_id, head_second, head_rank, tail_carry, tail_head = carry
    top = jnp.max(head_key, axis=1, keepdims=True)                     # [R, 1]
    tied = head_key == top
    pick = jnp.min(jnp.where(tied, head_id, _NO_ID), axis=1, keepdims=True)
    top_residual = tail_may_win = None
    if exact:  # among equal keys the larger exact sum (packed ids keep the slots' order)
      pick, top_residual, tail_may_win = _break_key_ties(
          top, tied, head_id, first_value, head_second, pick, some_inexact,
          tail_head if tails else None)
    won = head_id == pick
    if packed:  # once every head is taken the pick is _NO_ID: its rank bits are past all
      pick_slot = jnp.right_shift(pick, rank_bits)
      rank = pick & ((1 << rank_bits) - 1)
    else:  # every head is taken only where a tail is taken instead (won is then cleared)
      pick_slot = pick
      rank = jnp.min(jnp.where(won, head_rank, ranked), axis=1, keepdims=True)
    taken_slot = pick_slot
    if tails:
      took_tail, taken_slot = _against_tails(tail_head, top, pick_slot, top_residual)
      won = won & ~took_tail
      if advance:
        tail_carry, tail_head = _advance_tails(tails, tail_carry, tail_head, took_tail,
                                               tail_may_win)
    picks = store_pick(r, taken_slot, picks)
    if not advance:
      return picks
    # Loaded after the tails' branch: before it, 0.5% faster at S = 512, k = 32 but 6%
    # slower at S = 1,024, k = 64 (an H100; WORKSPACE.md, issue 12, session 75).
    new_key, new_id, new_second = heads(rank + 1)
    if not packed:
      head_rank = jnp.where(won, rank + 1, head_rank)
    if exact:
      head_second = jnp.where(won, new_second, head_second)
    return (picks, jnp.where(won, new_key, head_key), jnp.where(won, new_id, head_id),
            head_second, head_rank, tail_carry, tail_head)

  # Round 0 takes the pair (0, 0): lane 0 starts at rank 1, every other lane at rank 0.
  picks = (jnp.zeros((rows.load.shape[0], out_lanes.shape[1]), jnp.int32)
           if picks_in_registers else ())
  picks = store_pick(0, first_col_at_zero * sub_keys + logged(second_log.col_plane, first_rank),
                     picks)
  lane_zero = lane == 0
  at_zero, at_one = heads(first_rank), heads(first_rank + 1)
  head_key, head_id, head_second = (jnp.where(lane_zero, one, zero)
                                    for zero, one in zip(at_zero, at_one))
  head_rank = () if packed else jnp.broadcast_to(
      jnp.where(lane < ranked, lane_zero.astype(jnp.int32), ranked), shape)
  carry = (picks, head_key, head_id, head_second if exact else (), head_rank,
           *_start_tails(tails))
  if k > 1:
    carry = lax.fori_loop(1, k - 1, round_, carry)
    picks = round_(k - 1, carry, advance=False)
  if not picks_in_registers:
    platform.triton_barrier(interpret)  # the stored picks, before the logits load them
    return None
  # One store of a row's picks, where a store a round wrote 4 bytes at a time.
  pltriton.store(idx_ref.at[rows.store, jnp.where(out_lanes < k, out_lanes, k)], picks,
                 mask=live & (out_lanes < k))
  return picks


class _Entries(NamedTuple):
  """What a threshold selection chooses from, per part [R, P]: order-preserving keys
  (`_TAKEN`: no entry) and ids (of entries: distinct, in [0, 2**id_bits))."""
  keys: tuple
  ids: tuple
  id_bits: int


def _count(entries: _Entries, predicate) -> jax.Array:
  """[R, 1] int32: the entries (over all parts) where predicate(keys, ids) holds."""
  counts = [jnp.sum(predicate(keys, ids).astype(jnp.int32), axis=1, keepdims=True)
            for keys, ids in zip(entries.keys, entries.ids)]
  return functools.reduce(jnp.add, counts)


def _thresholds(entry_sets, k: int):
  """Per set of entries, (key_cut, id_cut) [R, 1] each such that the k best entries (the
  largest keys, the lowest id among equal keys) are exactly those with key > key_cut, or
  key == key_cut and id <= id_cut. Each set needs at least k entries.

  key_cut is the k-th largest key, or a smaller int32 t that exactly the k largest keys
  reach. It is built bit by bit as the largest t with at least k keys >= t (the sign bit
  first, then, as within one sign a set bit raises the value, each lower bit kept where
  the count still reaches k): counts one after another, each a compare and a sum across
  the row in registers, where k rounds of max-and-mask wait on two reductions and a reload
  each. The counts stop once exactly k keys are >= t in every row of the program (t then
  lies between the k-th largest key and the next), at most 32 counts (where those two
  keys are equal, every bit). On random normal scores that takes about 12 counts in a
  half of S = 128 at k = 64 and about 17-21 over the final candidates
  (`experiments.threshold_counts`; WORKSPACE.md, issue 12, session 59). On an H100 at
  65,536 rows, float32, back to back, fwd ms (session 60): S = 128, k = 64: 0.523 with
  every bit counted, 0.477 stopping early, 0.413 with the halves' ranks by key
  (`_store_ranked`); S = 256, k = 64: 0.699, 0.604, 0.544.
  Where more keys equal key_cut than the k best take (ties), id_cut is found the same way
  over their ids (`id_bits` counts, run only if some row of the program has such ties);
  else it is `_NO_ID`. The sets' counts run in one loop, as independent chains."""
  def at_least(entries, t):
    return _count(entries, lambda keys, _: keys >= t)

  def key_bit(carry):
    i, cuts, counts = carry
    def keep(entries, t, count):
      trial = t | jnp.left_shift(jnp.int32(1), 30 - i)
      trial_count = at_least(entries, trial)
      kept = trial_count >= k
      return jnp.where(kept, trial, t), jnp.where(kept, trial_count, count)
    cuts, counts = zip(*(keep(*args) for args in zip(entry_sets, cuts, counts)))
    return i + 1, cuts, counts

  def more_bits(carry):  # some row of some set has more than k keys >= its cut
    i, _, counts = carry
    return (i < 31) & functools.reduce(jnp.logical_or,
                                       (_any_row(count != k) for count in counts))

  nonnegative = tuple(at_least(entries, 0) for entries in entry_sets)
  signs = tuple(jnp.where(count >= k, 0, _TAKEN) for count in nonnegative)
  # Each set's count at its sign cut, without counting again: at 0 it is `nonnegative`; at
  # _TAKEN every lane of every part is >= it (padding too).
  counts = tuple(jnp.where(count >= k, count, sum(keys.shape[1] for keys in entries.keys))
                 for entries, count in zip(entry_sets, nonnegative))
  _, key_cuts, _ = lax.while_loop(more_bits, key_bit, (jnp.int32(0), signs, counts))
  # How many of the entries at key_cut the k best take (at least one), and whether fewer
  # than all of them.
  wanted = tuple(k - _count(entries, lambda keys, _, t=t: keys > t)
                 for entries, t in zip(entry_sets, key_cuts))
  tied = tuple(_count(entries, lambda keys, _, t=t: keys == t) > want
               for entries, t, want in zip(entry_sets, key_cuts, wanted))

  # One bit count for every set (the widest): more bits than a set's ids need leave its
  # cut the same.
  id_bits = max(entries.id_bits for entries in entry_sets)

  def id_bit(i, cuts):
    def keep(entries, t, want, cut):  # the largest cut with fewer than `want` ids below it
      trial = cut | jnp.left_shift(jnp.int32(1), id_bits - 1 - i)
      below = _count(entries, lambda keys, ids: (keys == t) & (ids < trial))
      return jnp.where(below < want, trial, cut)
    return tuple(keep(*args) for args in zip(entry_sets, key_cuts, wanted, cuts))

  any_tied = functools.reduce(jnp.maximum, (jnp.max(t.astype(jnp.int32)) for t in tied))
  id_cuts = lax.fori_loop(0, any_tied * id_bits, id_bit,
                          tuple(jnp.zeros_like(t) for t in key_cuts))
  return tuple((t, jnp.where(tie, cut, _NO_ID))
               for t, tie, cut in zip(key_cuts, tied, id_cuts))


def _store_ranked(entries: _Entries, cuts, rows: _Rows, work_ref, work_set: int, out,
                  k: int, interpret: bool, by_key_first: bool = False):
  """Stores the ids of the k best entries (`_thresholds`' cuts) best first: the id of rank
  r at out(rank) (out maps [R, K] lanes to a ref view), r < k.

  The chosen entries are packed into work_ref[:, work_set] ([rows, sets, 2, K]: keys, ids;
  K a power of two >= k) by their running count (`cumsum`), and each one's rank is the
  number of chosen entries that beat it by (key, id), counted one rival at a time: three
  compares a pair.

  by_key_first (the halves): one compare a pair where that gives the same ranks. Where
  every key of the program has its low id_bits bits zero (scores of few significant bits,
  such as bf16 ones cast to float32, of either sign: `ordered_key` adds one to a negative
  score's flipped bits), each key carries its id there, inverted, so the keys are distinct
  and order as (key, id) do. Only zeros count as free: two keys that differ only in those
  bits (say all zeros and all ones) would be ordered by id, not by key. Ranks by key alone
  are then 0..k-1 wherever a row's k keys are distinct, summing to k(k-1)/2; equal keys
  share a rank and the sum falls short, and then the program ranks again by (key, id).
  (Not the final candidates: their sums of bf16 scores tie in almost every row and leave
  no bits free, so the first count would be wasted there.)"""
  key_cut, id_cut = cuts
  live = rows.store < work_ref.shape[0]
  if by_key_first:
    id_mask = (1 << entries.id_bits) - 1
    ids_in_keys = ~functools.reduce(jnp.logical_or, (_any_row((keys & id_mask) != 0)
                                                     for keys in entries.keys))
  packed = jnp.zeros_like(key_cut)
  for keys, ids in zip(entries.keys, entries.ids):
    chosen = (keys > key_cut) | ((keys == key_cut) & (ids <= id_cut))
    # Lanes not stored point past the packed ones (k): interpret mode writes a masked
    # lane's old value back, which must not land on a stored one.
    lane = jnp.where(chosen, packed + jnp.cumsum(chosen.astype(jnp.int32), axis=1) - 1, k)
    mask = chosen & live
    if by_key_first:
      keys = jnp.where(ids_in_keys, (keys & ~id_mask) | (id_mask - ids), keys)
    pltriton.store(work_ref.at[rows.store, work_set, 0, lane], keys, mask=mask)
    pltriton.store(work_ref.at[rows.store, work_set, 1, lane], ids, mask=mask)
    packed = packed + jnp.sum(chosen.astype(jnp.int32), axis=1, keepdims=True)
  platform.triton_barrier(interpret)
  width = work_ref.shape[-1]
  lanes = jnp.arange(width, dtype=jnp.int32)[None, :]
  inside = jnp.broadcast_to(lanes < k, (rows.load.shape[0], width))
  at = jnp.minimum(lanes, k - 1)
  keys = pltriton.load(work_ref.at[rows.load, work_set, 0, at], mask=inside, other=_TAKEN)
  ids = pltriton.load(work_ref.at[rows.load, work_set, 1, at], mask=inside, other=_NO_ID)

  def rank_by(beats):  # one rival per step, against every packed entry at once
    def count_rival(f, rank):
      rival = jnp.full(rows.load.shape, f, jnp.int32)
      rival_key = pltriton.load(work_ref.at[rows.load, work_set, 0, rival])  # [R, 1]
      return rank + beats(rival, rival_key).astype(jnp.int32)
    return lax.fori_loop(0, k, count_rival, jnp.zeros(keys.shape, jnp.int32))

  def by_key_and_id(rival, rival_key):
    rival_id = pltriton.load(work_ref.at[rows.load, work_set, 1, rival])
    return _beats(rival_key, rival_id, keys, ids)

  if by_key_first:
    rank = rank_by(lambda _, rival_key: rival_key > keys)
    short = jnp.sum(jnp.where(inside, rank, 0), axis=1, keepdims=True) != k * (k - 1) // 2
    rank = lax.cond(_any_row(short), lambda _: rank_by(by_key_and_id), lambda same: same,
                    rank)
  else:
    rank = rank_by(by_key_and_id)
  stored = jnp.broadcast_to(live, inside.shape) & inside
  pltriton.store(out(jnp.where(stored, rank, k)), ids, mask=stored)
  platform.triton_barrier(interpret)


def _threshold_halves(scores_ref, rows: _Rows, logs, work_ref, *, sub_keys: int, rounds: int,
                      interpret: bool) -> None:
  """`_scan_half`'s picks for both halves by `_thresholds` (`half_select="threshold"`):
  the `rounds` best of each half, ranked by `_store_ranked` into its pick log (each half
  packs into its own set of work_ref [rows, 2, 2, K])."""
  cols = jnp.arange(next_power_of_two(sub_keys), dtype=jnp.int32)[None, :]
  halves = tuple(_Entries((_keys(scores_ref, rows, offset, cols, sub_keys),),
                          (jnp.broadcast_to(cols, (rows.load.shape[0], cols.shape[1])),),
                          max(1, (sub_keys - 1).bit_length()))
                 for offset in (0, sub_keys))
  for half, (entries, cuts, log) in enumerate(zip(halves, _thresholds(halves, rounds), logs)):
    _store_ranked(entries, cuts, rows, work_ref, half, lambda lane, log=log: (
        log.scratch.at[rows.store, log.col_plane, lane]), rounds, interpret, by_key_first=True)


def _log_keys(scores_ref, rows: _Rows, logs, sub_keys: int, rounds: int,
              interpret: bool) -> None:
  """Each half's picks' keys into its pick log (planes 2, 3), for selections that log
  only the columns (`_threshold_halves`)."""
  platform.triton_barrier(interpret)  # the columns, before their loads
  rank = jnp.arange(next_power_of_two(rounds), dtype=jnp.int32)[None, :]
  at = jnp.broadcast_to(jnp.minimum(rank, rounds - 1), (rows.load.shape[0], rank.shape[1]))
  stored = jnp.broadcast_to((rows.store < logs[0].scratch.shape[0]) & (rank < rounds),
                            at.shape)
  lanes = jnp.broadcast_to(rank, at.shape)  # unclamped: a masked lane's store lands apart
  for offset, log in zip((0, sub_keys), logs):
    cols = pltriton.load(log.scratch.at[rows.load, log.col_plane, at])
    pltriton.store(log.scratch.at[rows.store, log.key_plane, lanes],
                   _keys(scores_ref, rows, offset, cols, sub_keys), mask=stored)


def _select_by_threshold(scores_ref, keys, slots, rows: _Rows, work_ref, idx_ref, k: int,
                         sub_keys: int, interpret: bool) -> _Picked:
  """`_select`'s result by `_thresholds` (`final_select="threshold"`), packing into set 0
  of work_ref; whether entries tied at the cut key were chosen against the exact order as
  `_Picked.missed` (then `_Picked.heads` need not name them)."""
  candidates = _Entries(tuple(keys), tuple(slots), max(1, (sub_keys * sub_keys - 1).bit_length()))
  (cuts,) = _thresholds((candidates,), k)
  key_cut, id_cut = cuts

  def at_cut_missed():
    """Whether some entry at the cut key left out ranks before one taken (by slot) in the
    exact order: a larger residual (the taken ones have the lower slots)."""
    taken_low, left_high = jnp.full(key_cut.shape, jnp.inf), jnp.full(key_cut.shape, -jnp.inf)
    for part_keys, part_slots in zip(keys, slots):
      at_cut = part_keys == key_cut
      safe = jnp.where(at_cut, part_slots, 0)
      _, residual = _slot_sums(scores_ref, rows, safe, sub_keys)
      taken = at_cut & (part_slots <= id_cut)
      taken_low = jnp.minimum(taken_low, jnp.min(jnp.where(taken, residual, jnp.inf), axis=1,
                                                 keepdims=True))
      left_high = jnp.maximum(left_high, jnp.max(jnp.where(at_cut & ~taken, residual,
                                                           -jnp.inf), axis=1, keepdims=True))
    return _any_row(left_high > taken_low)

  # Ties at the cut: more entries have the cut key than the k best take (id_cut set).
  missed = _only_where(_any_row(id_cut != _NO_ID), at_cut_missed)
  _store_ranked(candidates, cuts, rows, work_ref, 0,
                lambda lane: idx_ref.at[rows.store, lane], k, interpret)
  return _Picked((), None, missed)


def _exact_sums(scores_ref, rows: _Rows, first_cols, second_cols, sub_keys: int):
  """(key, residual) of the sums s1[first_cols] + s2[second_cols] (columns in range,
  broadcast against the rows): `ordered_key` of the float32 sum and `sum_residual`."""
  first = _load_scores(scores_ref, rows, first_cols, None)
  second = _load_scores(scores_ref, rows, sub_keys + second_cols, None)
  total = first + second
  return ordered_key(total), sum_residual(first, second, total)


def _slot_sums(scores_ref, rows: _Rows, slots, sub_keys: int):
  """`_exact_sums` of slots i1 * S + i2 (in range)."""
  return _exact_sums(scores_ref, rows, slots // sub_keys, slots % sub_keys, sub_keys)


def _only_where(flag, check):
  """check() (a scalar bool) where the scalar `flag` is set, else False, under a
  `lax.cond` (so check's loads run only where needed). The false branch returns the flag
  itself: Triton's lowering cannot yield a constant from a branch."""
  return lax.cond(flag, lambda _: check(), lambda no: no, flag)


def _beats_exactly(key, residual, slot, other_key, other_residual, other_slot):
  """Whether (key, residual, slot) ranks before the other: the larger exact sum (key, then
  residual), the lower slot among equal sums: the contract's order."""
  return (key > other_key) | ((key == other_key) & (
      (residual > other_residual) | ((residual == other_residual) & (slot < other_slot))))


def _exact_order_missed(scores_ref, rows: _Rows, idx_ref, picked: _Picked, k: int,
                        sub_keys: int) -> jax.Array:
  """Whether the k slots in idx_ref, taken by (key, slot) from sequences each in the exact
  order, may not be the exact order's k best (a scalar). They are, exactly when (1) each
  ranks before the next in the exact order and (2) no head of the untaken candidates
  ranks before the last; both can fail only among equal keys, so the residuals are loaded
  only where some row has two picks in a row with equal keys (`_Picked.runs`) or a head
  at the last pick's key."""
  lanes = jnp.arange(next_power_of_two(k), dtype=jnp.int32)[None, :]
  last_lane = jnp.full(rows.load.shape, k - 1, jnp.int32)
  last_slot = pltriton.load(idx_ref.at[rows.load, last_lane])        # [R, 1]
  last = _slot_sums(scores_ref, rows, last_slot, sub_keys)

  def out_of_order():  # (1)
    slot = pltriton.load(idx_ref.at[rows.load, jnp.minimum(lanes, k - 1)])
    after = pltriton.load(idx_ref.at[rows.load, jnp.minimum(lanes + 1, k - 1)])
    ranked = _beats_exactly(*_slot_sums(scores_ref, rows, slot, sub_keys), slot,
                            *_slot_sums(scores_ref, rows, after, sub_keys), after)
    return _any_row(~ranked & (lanes < k - 1))

  def head_before_last():  # (2)
    missed = jnp.zeros((), jnp.bool_)
    for keys, slots in picked.heads:
      at_cut = keys == last[0]
      slots = jnp.where(at_cut, slots, 0)
      before = _beats_exactly(*_slot_sums(scores_ref, rows, slots, sub_keys), slots,
                              *last, last_slot)
      missed = missed | _any_row(at_cut & before)
    return missed

  missed = (out_of_order() if picked.runs is None
            else _only_where(_any_row(picked.runs), out_of_order))
  if picked.missed is not None:
    missed = missed | picked.missed
  if picked.heads:
    at_cut = functools.reduce(jnp.logical_or, (_any_row(keys == last[0])
                                               for keys, _ in picked.heads))
    missed = missed | _only_where(at_cut, head_before_last)
  return missed


def _largest_residual(among, residuals, slots):
  """(residual, slot) [R, 1]: the largest residual of the entries `among` [R, X] (bool)
  and the lowest slot that has it (slots may be any ids in the slots' order): the best of
  entries of one key in the exact order. A row with none: -inf and _NO_ID."""
  residual = jnp.max(jnp.where(among, residuals, -jnp.inf), axis=1, keepdims=True)
  slot = jnp.min(jnp.where(among & (residuals == residual), slots, _NO_ID), axis=1,
                 keepdims=True)
  return residual, slot


def _best_exactly(keys, residuals, slots):
  """(key, residual, slot) [R, 1] of the best of [R, X] in the exact order (slots may be
  any ids in the slots' order)."""
  key = jnp.max(keys, axis=1, keepdims=True)
  return (key, *_largest_residual(keys == key, residuals, slots))


def _break_key_ties(top, tied, ids, first_values, second_values, pick, some_inexact,
                    tail_head=None):
  """(pick, top_residual, tail_may_win): the frontier's round winner [R, 1] in the exact
  order and its residual, and (given tail_head; else None) a scalar that holds wherever
  some row's tail head may win the round (a tail head of key `top` or above), given
  the best key `top` [R, 1], the heads that have it (`tied` [R, L], their ids, in the
  slots' order, and their two scores) and `pick`, the lowest id among them. Among equal
  keys the larger residual wins, so only a row with two such heads, or a tail head of key
  `top` (tail_head: its key, slot and residual [R, 1]) to compare with the winner, needs
  residuals: in a program with such a row (rare on float32 scores: 74 of 65,536 random
  normal rows at S = 512, k = 32 have two equal logits in a row) they are computed from
  the heads' scores by the same `sum_residual` as the twin's; elsewhere the pick stands,
  with top_residual 0 (compared with nothing).
  Every row has a head of key `top`, so a row counting more than one such head (or a tail
  head of that key) has two: one sum of those rows' flags over the program, independent of
  the pick's reduction, decides the branch, and the rows are told apart only inside it.

  Where every head's sum in the program is exact in float32 (`some_inexact` False, a
  scalar: on scores on bf16's grid, as the layer's are with bf16 activations, nearly every
  row has equal sums among its best k + 1), equal keys among heads are equal sums, so the
  lowest id is already the exact order's pick, and every head's residual is 0, which is
  what `_against_tails` compares a tail head's with: the branch runs only where some sum
  may be inexact."""
  tail_key = None if tail_head is None else tail_head[0]
  # Per row, then over the rows: a tail head of key `top` joins its row's flag before the
  # sum over the rows, so one reduction serves both (two were 2 shuffles more a round).
  row_ties = jnp.sum(tied.astype(jnp.int32), axis=1, keepdims=True)        # [R, 1]
  several = row_ties > 1
  tail_may_win = None
  if tail_head is None:
    ties = jnp.sum(several.astype(jnp.int32))
  else:
    several = several | (tail_key == top)
    # Whether some row's tail may win rides in the same sum over the rows, counted in
    # units of 2R (a power of two above the R rows' count of ties), so the round needs no
    # reduction of its own to decide the tails' branch: a tail head beats `top` only with
    # a key at least `top`. On an H100 at S = 512, k = 32: 0.310 ms against 0.314-0.315
    # with a reduction of its own after the pick, and ahead or level at the other
    # benchmarked shapes (WORKSPACE.md, issue 12, session 75).
    tail_unit = 2 * top.shape[0]
    flags = jnp.sum(several.astype(jnp.int32) + jnp.where(tail_key >= top, tail_unit, 0))
    ties, tail_may_win = flags & (tail_unit - 1), flags >= tail_unit

  def by_residual(pick):
    # A row's best head always ties itself, so a count above 1 is a second such head or a
    # tail head of key `top`.
    has_ties = several & (top != _TAKEN)  # every head taken: _NO_ID, a tail's turn
    residuals = sum_residual(first_values, second_values, first_values + second_values)
    residual, exact_pick = _largest_residual(tied & (ids != _NO_ID), residuals, ids)
    return jnp.where(has_ties, exact_pick, pick), jnp.where(has_ties, residual, 0.0)

  pick, residual = lax.cond((ties > 0) & some_inexact, by_residual,
                            lambda pick: (pick, jnp.zeros(pick.shape, jnp.float32)), pick)
  return pick, residual, tail_may_win


def _exact_frontier(scores_ref, rows: _Rows, logs, idx_ref, k: int, sub_keys: int,
                    ranked: int, lazy: bool, interpret: bool):
  """The k best in the exact order, slots to idx_ref: for a program where
  `_exact_order_missed` says the selection by (key, slot) may have missed it. A frontier
  over the pairs (i, j) of ranks below `ranked` with (i + 1)(j + 1) <= k (lane i's next
  rank j in registers, the heads' sums loaded through the pick logs each round) and, with
  `lazy` tails, each half's entries after its last ranked one paired with the other
  half's best (a tail's head found by a scan of its half in blocks, again after each round
  that takes it), compared by (key, residual, slot). Small on purpose: it runs in few
  programs, but its registers count in all of them (restarting the tails' groups here
  took the kernel from 155 to 254 registers in pip Triton's build and made it 11-27%
  slower on the H200). Even this form cost session 41's frontier about 8% at S = 512, k =
  32 by its presence and 4% more by running in the few programs that needed it, so the
  frontier now compares exactly instead and holds none (WORKSPACE.md, issue 12, session
  42): the tournament and the threshold selections use it."""
  live = rows.store < idx_ref.shape[0]
  lane = jnp.arange(next_power_of_two(ranked), dtype=jnp.int32)[None, :]   # [1, L]
  lengths = jnp.where(lane < ranked, jnp.minimum(k // (lane + 1), ranked), 0)
  shape = (rows.load.shape[0], lane.shape[1])

  def log_col(half, rank):  # column of `rank` ([R, X] or [1, X]) in a half's pick log
    return pltriton.load(logs[half].scratch.at[rows.load, logs[half].col_plane, rank])

  def lane_heads(first, j):  # (key, residual, slot) [R, L] of each lane's pair (i, j)
    second = log_col(1, jnp.minimum(j, ranked - 1))
    key, residual = _exact_sums(scores_ref, rows, first, second, sub_keys)
    inside = j < lengths
    return (jnp.where(inside, key, _TAKEN), residual,
            jnp.where(inside, first * sub_keys + second, _NO_ID))

  block = min(next_power_of_two(sub_keys), 32)
  block_cols = jnp.arange(block, dtype=jnp.int32)[None, :]

  def tail_head(half, after):
    """(key, residual, slot) [R, 1] of half's best entry after `after` ((score key, col)
    [R, 1], in (key desc, col asc) order) paired with the other half's rank 0; and its
    (score key, col)."""
    offset = half * sub_keys
    partner_col = log_col(1 - half, jnp.zeros(rows.load.shape, jnp.int32))
    partner = _load_scores(scores_ref, rows, (1 - half) * sub_keys + partner_col, None)

    def scan(b, best):
      cols = b * block + block_cols
      keys = _keys(scores_ref, rows, offset, cols, sub_keys)
      keys = jnp.where(_beats(after[0], after[1], keys, cols), keys, _TAKEN)
      top = jnp.max(keys, axis=1, keepdims=True)
      col = jnp.min(jnp.where(keys == top, cols, _NO_ID), axis=1, keepdims=True)
      better = _beats(top, col, *best)
      return jnp.where(better, top, best[0]), jnp.where(better, col, best[1])

    score_key, col = lax.fori_loop(0, pl.cdiv(sub_keys, block), scan,
                                   (jnp.full(rows.load.shape, _TAKEN, jnp.int32),
                                    jnp.full(rows.load.shape, _NO_ID, jnp.int32)))
    value = _load_scores(scores_ref, rows, offset + jnp.minimum(col, sub_keys - 1), None)
    total = value + partner
    pair = (col, partner_col) if half == 0 else (partner_col, col)
    used_up = score_key == _TAKEN
    return ((jnp.where(used_up, _TAKEN, ordered_key(total)),
             sum_residual(value, partner, total),
             jnp.where(used_up, _NO_ID, pair[0] * sub_keys + pair[1])), (score_key, col))

  def last_ranked(half):
    col = log_col(half, jnp.full(rows.load.shape, ranked - 1, jnp.int32))
    return _keys(scores_ref, rows, half * sub_keys, col, sub_keys), col

  def round_(r, carry):
    j, tails = carry
    # Each lane's first-half column, loaded in the round rather than held in registers
    # across it (the fallback's registers count in every program).
    first = log_col(0, jnp.broadcast_to(jnp.minimum(lane, ranked - 1), shape))
    key, residual, slot = _best_exactly(*lane_heads(first, j))
    which = jnp.full(key.shape, -1, jnp.int32)
    for half, (head, _) in enumerate(tails):
      better = _beats_exactly(*head, key, residual, slot)
      key, residual, slot = (jnp.where(better, new, old)
                             for new, old in zip(head, (key, residual, slot)))
      which = jnp.where(better, half, which)
    pltriton.store(idx_ref.at[rows.store, jnp.full(rows.store.shape, r, jnp.int32)], slot,
                   mask=live)
    j = jnp.where((which < 0) & (first == slot // sub_keys), j + 1, j)
    def advance(tail, half):  # the next entry for the rows that took this tail
      took = which == half
      return jax.tree.map(lambda new, old: jnp.where(took, new, old),
                          tail_head(half, tail[1]), tail)

    tails = tuple(lax.cond(_any_row(which == half), functools.partial(advance, half=half),
                           lambda tail: tail, tail) for half, tail in enumerate(tails))
    return j, tails

  tails = tuple(tail_head(half, last_ranked(half)) for half in (0, 1)) if lazy else ()
  lax.fori_loop(0, k, round_, (jnp.zeros(shape, jnp.int32), tails))
  platform.triton_barrier(interpret)


def _working_memory(num_rows: int, k: int, per_half: int, ranked: int,
                    parts: tuple[int, ...], config: KernelConfig) -> dict:
  """The kernel's working memory by name (the Triton backend has no scratch operands, so
  it is outputs): picks [rows, 4, K'] int32, the halves' picks by rank and their keys
  (`_PickLog`; K' lanes for the `ranked` ranks logged, so that a row's planes are
  contiguous: at S = 512, k = 32 a half's two planes fill one line of 128 bytes, and
  before the frontier only the second half's is written, where lanes for all k' ranks
  took four half-used lines); "tournament": candidates [rows, 2, sum(parts)] int32
  (`_select`);
  "threshold" (either
  step): work [rows, sets, 2, K] int32, `_store_ranked`'s packing (a set per half, the
  final selection reusing set 0)."""
  memory = {"picks": (num_rows, 4, next_power_of_two(ranked))}
  if config.final_select == "tournament":
    memory["candidates"] = (num_rows, 2, sum(parts))  # keys, slots
  halves = config.half_select == "threshold"
  if halves or config.final_select == "threshold":
    lanes = max(per_half if halves else 1, k if config.final_select == "threshold" else 1)
    memory["work"] = (num_rows, 2 if halves else 1, 2, next_power_of_two(lanes))
  return {name: jax.ShapeDtypeStruct(shape, jnp.int32) for name, shape in memory.items()}


def _kernel(scores_ref, ranks_ref, idx_ref, logits_ref, *work_refs, work_names, num_rows: int,
            sub_keys: int, k: int, per_half: int, ranked: int, parts: tuple[int, ...],
            config: KernelConfig, interpret: bool):
  """ranks [2, sum(parts)] int32: the candidates' ranks in the first and second half
  (-1 = padding), part after part (the frontier, which forms its own from the pick logs:
  None, no operand); work_refs: `_working_memory`, named by work_names;
  ranked: the ranks per half selected in order (< per_half: the rest as `_Tail`s)."""
  work = dict(zip(work_names, work_refs))
  picks_ref = work["picks"]
  block_rows = config.block_rows
  row = pl.program_id(0) * block_rows + jnp.arange(block_rows, dtype=jnp.int32)[:, None]
  live = row < num_rows
  rows = _Rows(load=jnp.minimum(row, num_rows - 1), store=jnp.where(live, row, num_rows))
  starts = np.cumsum((0,) + parts[:-1])
  first_rank, second_rank = (
      tuple(ranks_ref[half, pl.ds(int(start), size)][None, :]
            for start, size in zip(starts, parts))
      for half in (0, 1))  # per part [1, P]

  logs = (_PickLog(picks_ref, 0, interpret), _PickLog(picks_ref, 1, interpret))
  width = 2 * sub_keys

  def picks_of_parts():  # per part, (first, second) [R, P]: its ranks' picks
    by_half = []
    for log, ranks in zip(logs, (first_rank, second_rank)):
      platform.triton_barrier(interpret)  # the half's pick log, before its loads
      by_half.append([_picks_by_rank(log, rows, ranks[part]) for part in range(len(parts))])
    return list(zip(*by_half))

  tails, first_picks = (), None
  if config.half_select == "groups":
    halves, half_starts, states, first_picks = _groups_halves(
        scores_ref, rows, logs, sub_keys=sub_keys, rounds=ranked, pick=config.pick,
        group_size=config.group_size, float_bests=config.float_group_bests,
        first_in_registers=config.final_select == "frontier")
  elif config.half_select == "threshold":
    _threshold_halves(scores_ref, rows, logs, work["work"], sub_keys=sub_keys,
                      rounds=per_half, interpret=interpret)
  else:
    for offset, log in zip((0, sub_keys), logs):
      _scan_half(scores_ref, rows, offset, log, sub_keys=sub_keys, rounds=per_half,
                 pick=config.pick)
  together = config.form_parts_together or config.final_select == "threshold"
  if together:  # every part's picks at once
    picks_of_part = picks_of_parts().__getitem__
  else:  # each part's when it is formed
    platform.triton_barrier(interpret)  # the pick logs, before the candidates load them

    def picks_of_part(part):
      return tuple(_picks_by_rank(log, rows, ranks[part])
                   for log, ranks in zip(logs, (first_rank, second_rank)))

  # The tails load the pick log (each half's rank 0): after the barriers above, which every
  # final selection passes (for the frontier, `picks_of_parts` of no parts is those barriers
  # alone, what its tails need with several warps).
  if config.half_select == "groups" and ranked < per_half:  # the later ranks as lazy tails
    tails = tuple((_Tail.partnered(half, other_start), state)
                  for half, other_start, state in zip(halves, half_starts[::-1], states))

  def candidate_part(part):
    """(keys [R, P], slots [R, P]) of candidate part `part` (module docstring, step 2)."""
    first, second = picks_of_part(part)
    rank = first_rank[part]
    first_scores = _load_scores(scores_ref, rows, first, width)
    second_scores = _load_scores(scores_ref, rows, sub_keys + second, width)
    sums = first_scores + second_scores
    keys = jnp.where(rank >= 0, ordered_key(sums), _TAKEN)
    slots = jnp.where(rank >= 0, first * sub_keys + second, _NO_ID)
    return keys, slots

  if together:  # every part formed before any is stored
    candidate_part = [candidate_part(part) for part in range(len(parts))].__getitem__
  idx = None  # the frontier's picks, where it keeps them in registers
  if config.final_select == "threshold":  # selects from every part at once
    keys, slots = zip(*(candidate_part(part) for part in range(len(parts))))
    picked = _select_by_threshold(scores_ref, keys, slots, rows, work["work"], idx_ref, k,
                                  sub_keys, interpret)
  elif config.final_select == "frontier":  # exact by construction, or not at all
    if config.half_select == "threshold":
      _log_keys(scores_ref, rows, logs, sub_keys, per_half, interpret)
    idx = _select_frontier(rows, logs, idx_ref, k, sub_keys, ranked, interpret, tails,
                           exact=config.exact_order, first_picks=first_picks,
                           picks_in_registers=_picks_in_registers(k, config))
    picked = None
  else:
    picked = _select(candidate_part, starts, rows, work["candidates"], idx_ref, k, sub_keys,
                     interpret, tails, together=together)
  if config.exact_order and picked is not None:
    # Rare: keys of different exact sums tie where the order counts.
    lax.cond(_exact_order_missed(scores_ref, rows, idx_ref, picked, k, sub_keys),
             functools.partial(_exact_frontier, scores_ref, rows, logs, idx_ref, k, sub_keys,
                               ranked, bool(tails), interpret), lambda: None)
  out_lanes = jnp.arange(next_power_of_two(k), dtype=jnp.int32)[None, :]
  stored = live & (out_lanes < k)
  out_at = jnp.where(out_lanes < k, out_lanes, k)  # masked lanes out of bounds (interpret mode)
  if idx is None:
    idx = pltriton.load(idx_ref.at[rows.load, jnp.minimum(out_lanes, k - 1)],
                        eviction_policy=_LAST_READ)
  # The logits from the same float32 values as the sums (-0.0 made +0.0, as in the twin).
  logits = (_load_scores(scores_ref, rows, idx // sub_keys, width, _LAST_READ)
            + _load_scores(scores_ref, rows, sub_keys + idx % sub_keys, width, _LAST_READ))
  logits = jnp.where(logits == 0, jnp.float32(0), logits)
  pltriton.store(logits_ref.at[rows.store, out_at], logits.astype(logits_ref.dtype),
                 mask=stored)


def _forward(scores, k: int, config: KernelConfig, interpret: bool):
  lead, width = scores.shape[:-1], scores.shape[-1]
  sub_keys = width // 2
  per_half = min(k, sub_keys)
  rows = scores.reshape(-1, width)
  num_rows = rows.shape[0]
  ranked = ranked_per_half(k, per_half, config)
  if config.final_select == "frontier":  # forms its candidates from the pick logs
    parts, ranks = (), None
  else:
    pairs = candidate_pairs(k, per_half)
    pair_ranks = pairs[(pairs < ranked).all(axis=1)].T  # the rest: the tails (`_Tail`)
    parts = candidate_parts(pair_ranks.shape[1])
    ranks = np.full((2, sum(parts)), -1, np.int32)
    ranks[:, :pair_ranks.shape[1]] = pair_ranks
  memory = _working_memory(num_rows, k, per_half, ranked, parts, config)
  kernel = functools.partial(_kernel, work_names=tuple(memory), num_rows=num_rows,
                             sub_keys=sub_keys, k=k, per_half=per_half, ranked=ranked,
                             parts=parts, config=config, interpret=interpret)
  if ranks is None:
    # No ranks operand: its constant cost a kernel launch of XLA's before every call (an
    # H100, 65,536 rows, S = 512, k = 32: 0.9 us on the device, 0.314 / 0.314 ms a call back
    # to back against 0.317 / 0.326 with it; WORKSPACE.md, issue 12, session 74).
    operands = (rows,)
    with_ranks = kernel

    def kernel(scores_ref, *refs):
      return with_ranks(scores_ref, None, *refs)
  else:
    operands = (rows, jnp.asarray(ranks))
  idx, logits, *_ = pl.pallas_call(
      kernel,
      name="product_key_topk_kernel",  # names the kernel in profiles
      out_shape=[jax.ShapeDtypeStruct((num_rows, k), jnp.int32),
                 jax.ShapeDtypeStruct((num_rows, k), scores.dtype), *memory.values()],
      grid=(pl.cdiv(num_rows, config.block_rows),),
      interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=config.num_warps, num_stages=1),
  )(*operands)
  return idx.reshape(*lead, k), logits.reshape(*lead, k)


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3))
def _topk(scores, k: int, config: KernelConfig, interpret: bool):
  return _forward(scores, k, config, interpret)


def _topk_fwd(scores, k, config, interpret):
  idx, logits = _forward(scores, k, config, interpret)
  # Residuals must be arrays: an empty [0, 2S] array remembers the scores' width and dtype.
  return (idx, logits), (idx, jnp.zeros((0, scores.shape[-1]), scores.dtype))


def _topk_bwd(k, config, interpret, residuals, cotangents):
  del k, config, interpret
  idx, marker = residuals
  return (scores_cotangent(idx, cotangents[1], marker.shape[1], marker.dtype),)


_topk.defvjp(_topk_fwd, _topk_bwd)


def product_key_topk(scores: jax.Array, k: int, *, config: KernelConfig | None = None,
                     interpret: bool | None = None) -> tuple[jax.Array, jax.Array]:
  """scores [..., 2S] -> (idx [..., k] int32, logits [..., k] in scores' dtype); the
  contract of `topk_xla.product_key_topk`. config: `default_config(S, k, rows)` when None
  (results do not depend on it). interpret: default unless on a GPU."""
  if config is None:
    config = default_config(scores.shape[-1] // 2, k, math.prod(scores.shape[:-1]))
  check_config(config)
  if interpret is None:
    interpret = not platform.on_gpu()
  return _topk(scores, k, config, interpret)


__all__ = ["FEW_ROWS_MAX", "FINAL_SELECTS", "HALF_SELECTS", "KernelConfig", "PICKS",
           "THRESHOLD_MAX_SUB_KEYS_PER_K", "TWO_ROWS_MIN_K", "TWO_ROWS_MIN_SUB_KEYS",
           "candidate_parts", "check_config", "default_config", "ordered_key",
           "product_key_topk"]
