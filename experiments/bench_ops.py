"""Times the memory ops (forward and forward+backward) on whatever device runs it.

  python -m experiments.bench_ops --op=gdn --batch=4 --seq_len=4096 --heads=8 \
      --key_dim=64 --value_dim=128 --dtype=bfloat16

Prints one JSON object (the last stdout line) with the configuration and the timings.
Each op registers a function in `BENCHMARKS` taking the parsed flags and returning a dict.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from absl import app
from absl import flags
import jax

from experiments import bench_sdm

_OP = flags.DEFINE_string("op", "gdn", "Which op to time: one of the keys of BENCHMARKS.")
_BATCH = flags.DEFINE_integer("batch", 4, "Batch size B.")
_SEQ_LEN = flags.DEFINE_integer("seq_len", 4096, "Sequence length T.")
_HEADS = flags.DEFINE_integer("heads", 8, "Heads H.")
_KEY_DIM = flags.DEFINE_integer("key_dim", 64, "Key dim K (GDN).")
_VALUE_DIM = flags.DEFINE_integer("value_dim", 128, "Value dim V / Dv.")
_SLOTS = flags.DEFINE_integer("slots", 65536, "Memory slots N per head (SDM).")
_WRITES = flags.DEFINE_integer("writes", 64, "Slots written per token W (SDM).")
_READS = flags.DEFINE_integer("reads", 64, "Slots read per token R (SDM).")
_CHUNK = flags.DEFINE_integer("chunk_size", 64, "Chunk size C.")
_DTYPE = flags.DEFINE_enum("dtype", "bfloat16", ["bfloat16", "float32"], "Input dtype.")
_IMPL = flags.DEFINE_string("impl", "auto", "impl= passed to the op.")
_WARMUP = flags.DEFINE_integer("warmup", 2, "Untimed calls before timing.")
_REPEATS = flags.DEFINE_integer("repeats", 10, "Timed calls; the median is reported.")
_SDM_ERROR = flags.DEFINE_enum("sdm_error", "shared", ["shared", "per_slot"],
                               "Error form of the sparse delta rule (SDM).")
_SDM_PHASES = flags.DEFINE_bool("sdm_phases", True,
                                "Also time phase 1 and phase 2 of the chunked SDM op alone.")

BENCHMARKS: dict[str, Callable[[], dict[str, Any]]] = {}


def _bench_sdm() -> dict[str, Any]:
  return bench_sdm.benchmark(
      batch=_BATCH.value, seq_len=_SEQ_LEN.value, heads=_HEADS.value, slots=_SLOTS.value,
      value_dim=_VALUE_DIM.value, writes=_WRITES.value, reads=_READS.value,
      chunk_size=_CHUNK.value, dtype=_DTYPE.value, impl=_IMPL.value, error=_SDM_ERROR.value,
      warmup=_WARMUP.value, repeats=_REPEATS.value, phases=_SDM_PHASES.value)


BENCHMARKS["sdm"] = _bench_sdm


def main(argv):
  del argv
  if _OP.value not in BENCHMARKS:
    raise ValueError(f"--op must be one of {sorted(BENCHMARKS)}, got {_OP.value!r}")
  result = {
      "op": _OP.value,
      "device": str(jax.devices()[0].device_kind),
      "jax": jax.__version__,
      **BENCHMARKS[_OP.value](),
  }
  print(json.dumps(result))


if __name__ == "__main__":
  app.run(main)
