"""Product-key top-k: the k best of S x S slots scored as sums of two halves (DESIGN.md 3.2).

Slot `i1 * S + i2` scores `s1[i1] + s2[i2]` where `s1, s2` are the halves of a score
vector of size 2S; the S^2 sums are never formed. Implementations (same results, ties
included) live in `pallas_kernels.product_key`: "xla" (per-half sorts, then a sort of the
pair grid pruned to ranks (i + 1)(j + 1) <= k) and the Pallas kernels (max-and-mask over
the same pruned grid): "pallas_gpu" (Triton), "pallas_tpu" (Mosaic) and "pallas" (the
family of this platform; see `sdm_jax.ops.dispatch`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pallas_kernels.product_key import topk_pallas
from pallas_kernels.product_key import topk_pallas_tpu
from pallas_kernels.product_key import topk_xla
from sdm_jax.ops import dispatch

IMPLS = ("auto", "xla") + dispatch.PALLAS_IMPLS
KERNELS = {"pallas_gpu": topk_pallas, "pallas_tpu": topk_pallas_tpu}
# "auto" takes the kernel on GPU up to this k, at any number of rows. On the H200 at
# 65,536 rows and S = 512 (WORKSPACE.md, issue 12) the kernel's grouped selection beats
# the XLA path at k = 32 (forward 0.64 vs 3.61 ms) and k = 64 (2.06 vs 4.49 ms), and at
# sdm_small's 32,768 rows, S = 128, k = 64 (0.95 vs 1.70 ms; S = 256: 0.94 vs 1.79). At
# decode's 1-8 rows the SDM decode step inside its scans (`bench_decode`, H100, session 61,
# k = 64, two processes each) is faster with the kernel at S = 128 and 512 (43-57 against
# 51-68 us a token) and level or faster at S = 1,024 (72-77 against 73-81 us).
AUTO_KERNEL_MAX_K = 64


def product_key_topk(scores: jax.Array, k: int, *, impl: str = "auto"
                     ) -> tuple[jax.Array, jax.Array]:
  """The k best slots of a product-key score vector.

  Args:
    scores: [..., 2S] float (not NaN); the first S entries score the first sub-key, the
      last S the second.
    k: how many slots to select, 1 <= k <= S * S.
    impl: "auto" (the GPU kernel on GPU for k <= AUTO_KERNEL_MAX_K, else the XLA path),
      "xla", "pallas" (the kernel family of this platform: TPU on a TPU, GPU elsewhere),
      "pallas_gpu" or "pallas_tpu" (that family; interpret mode off its platform).

  Returns:
    idx: [..., k] int32 slot ids `i1 * S + i2` in [0, S * S), distinct along the last axis:
      the k largest sums, compared exactly (where two different sums round to one float,
      the larger first), the lowest id first among equal sums (-0.0 equals +0.0).
    logits: [..., k] the sums `s1[i1] + s2[i2]` (formed in float32, returned in scores'
      dtype), in descending order; gradients flow to the selected score entries only (ids
      are discrete).
  """
  if scores.ndim < 1:
    raise ValueError(f"scores must have a last axis of size 2S, got shape {scores.shape}")
  two_s = scores.shape[-1]
  if two_s % 2 or two_s == 0:
    raise ValueError(
        f"scores' last dim must be 2S (even and > 0: two sub-key halves), got {two_s}")
  num_sub_keys = two_s // 2
  if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= num_sub_keys**2:
    raise ValueError(
        f"k must be an int in [1, S*S] = [1, {num_sub_keys**2}] (S = {num_sub_keys}), "
        f"got {k!r}")
  if not jnp.issubdtype(scores.dtype, jnp.floating):
    raise ValueError(f"scores must be floating point, got dtype {scores.dtype}")
  float64 = jnp.dtype(scores.dtype) == jnp.float64

  def kernel_not_chosen():  # why "auto" on GPU keeps the XLA path, or None
    if float64:
      return "float64 scores"
    if k > AUTO_KERNEL_MAX_K:
      return f"k > {AUTO_KERNEL_MAX_K}: the kernel was not timed faster"
    return None

  chosen = dispatch.resolve_impl(impl, IMPLS, xla="xla", pallas_unsupported=kernel_not_chosen)
  if chosen in KERNELS:
    if float64:
      raise ValueError(f"impl={impl!r} takes float32, bfloat16 or float16 scores, got float64")
    return KERNELS[chosen].product_key_topk(scores, k)
  return topk_xla.product_key_topk(scores, k)
