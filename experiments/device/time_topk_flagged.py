"""Times the product-key top-k kernel on rows where sums of different exact value share
float32 keys in every program: a first half that swamps the second (1e4 x normal against
1e-3 x normal). There the tournament's `_exact_order_missed` flags every program and each
runs `_exact_frontier` after its selection, its worst case; the frontier compares its
heads exactly (since session 42; in sessions 41-42 it took the same fallback, before
session 41 `_TieWatch` sent it to the tournament). Each tiling, on these rows, on normal
rows, and on normal rows rounded to bfloat16 then held in float32 (what the layer passes
with bf16 activations: sums of different pairs often share a key there).

  python -m experiments.device.time_topk_flagged --rows=65536 --sub_keys=512 --k=32 \
      --tilings="default,final_select=tournament" --inputs=swamped,normal,bf16_grid
"""

from __future__ import annotations

import functools
import json

from absl import app
from absl import flags
import jax
import jax.numpy as jnp

from pallas_kernels.product_key import topk_pallas
from pallas_kernels.product_key import topk_xla
from sdm_jax.evaluation import tiling
from sdm_jax.evaluation import timing

_ROWS = flags.DEFINE_integer("rows", 65536, "Rows of scores.")
_SUB_KEYS = flags.DEFINE_integer("sub_keys", 512, "S, scores per half.")
_K = flags.DEFINE_integer("k", 32, "Slots per row.")
_REPEATS = flags.DEFINE_integer("repeats", 30, "Timed calls.")
_TILINGS = flags.DEFINE_list("tilings", ["default", "final_select=tournament"],
                             "Kernel configs: 'default' or 'field=value;...' over KernelConfig.")
_INPUTS = flags.DEFINE_list("inputs", ["swamped", "normal"],
                            "Scores to time on, of swamped, normal, bf16_grid.")


def main(argv):
  del argv
  rows, sub_keys, k = _ROWS.value, _SUB_KEYS.value, _K.value
  first, second = jax.random.normal(jax.random.PRNGKey(0), (2, rows, sub_keys))
  normal = jnp.concatenate([first, second], axis=-1)
  inputs = {"swamped": jnp.concatenate([1e4 * first, 1e-3 * second], axis=-1),
            "normal": normal,
            "bf16_grid": normal.astype(jnp.bfloat16).astype(jnp.float32)}
  unknown = set(_INPUTS.value) - set(inputs)
  if unknown:
    raise ValueError(f"--inputs: {sorted(unknown)} not among {sorted(inputs)}")
  results = []
  for name in _INPUTS.value:
    scores = inputs[name]
    want = jax.jit(functools.partial(topk_xla.product_key_topk, k=k))(scores)[0]
    for spec in _TILINGS.value:
      config = tiling.parse_tiling(spec, topk_pallas.default_config(sub_keys, k, rows))
      topk = jax.jit(functools.partial(topk_pallas.product_key_topk, k=k, config=config))
      times = timing.time_call(lambda: topk(scores), warmup=2, repeats=_REPEATS.value)
      results.append({"scores": name, "tiling": spec,
                      "fwd_back_to_back_ms": times["back_to_back_ms"],
                      "same_ids_as_xla": bool(jnp.array_equal(topk(scores)[0], want))})
      print(f"{name:8s} {spec:30s} {times['back_to_back_ms']:.3f} ms "
            f"same ids: {results[-1]['same_ids_as_xla']}")
  print(json.dumps({"rows": rows, "sub_keys": sub_keys, "k": k, "results": results}))


if __name__ == "__main__":
  app.run(main)
