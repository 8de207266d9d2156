"""Where a call of the product-key top-k's forward spends its device time (session 74: the
kernel replayed outside JAX took 0.279 ms a launch on an H100, while `time_topk_flagged`
times a call at 0.316-0.325 ms back to back): the ops of the jitted forward by the
profiler (`timing.device_time_by_op`), and the back-to-back time over few and many calls.

  python -m experiments.device.profile_topk --rows=65536 --sub_keys=512 --k=32
"""

from __future__ import annotations

import functools
import json

from absl import app
from absl import flags
import jax
import jax.numpy as jnp

from pallas_kernels.product_key import topk_pallas
from sdm_jax.evaluation import timing

_ROWS = flags.DEFINE_integer("rows", 65536, "Rows of scores.")
_SUB_KEYS = flags.DEFINE_integer("sub_keys", 512, "S, scores per half.")
_K = flags.DEFINE_integer("k", 32, "Slots per row.")


def main(argv):
  del argv
  rows, sub_keys, k = _ROWS.value, _SUB_KEYS.value, _K.value
  scores = jax.random.normal(jax.random.PRNGKey(0), (rows, 2 * sub_keys), jnp.float32)
  # Compiled once: its HLO names the profile's ops, and the same executable is timed.
  topk = jax.jit(functools.partial(topk_pallas.product_key_topk, k=k)).lower(scores).compile()
  result = {"rows": rows, "sub_keys": sub_keys, "k": k,
            "back_to_back_ms": {str(n): timing.time_call(lambda: topk(scores), warmup=3,
                                                         repeats=n)["back_to_back_ms"]
                                for n in (30, 300)},
            "ops": timing.device_time_by_op(lambda: topk(scores), repeats=10,
                                            hlo_text=topk.as_text())}
  print(json.dumps(result))


if __name__ == "__main__":
  app.run(main)
