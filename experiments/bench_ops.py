"""Times the memory ops (forward and forward+backward) on whatever device runs it.

  python -m experiments.bench_ops --op=gdn --batch=4 --seq_len=4096 --heads=8 \
      --key_dim=64 --value_dim=128 --dtype=bfloat16
  python -m experiments.bench_ops --op=gdn_fla ...   # flash-linear-attention's, same inputs
  python -m experiments.bench_ops --op=train_step --train_configs=gdn_small,sdm_small --top_ops=40
  python -m experiments.bench_ops --op=row_traffic --batch=16 --heads=1 --sdm_slots=16384 \
      --value_dim=512 --seq_len=2048 --chunk_size=16 --sdm_writes=64 \
      --tilings="default,block_cols=512;block_rows=16"   # phase 2's row moves alone
  python -m experiments.bench_ops --op=row_chain ...same flags... \
      --tilings="default,programs=4"   # and chained chunk after chunk: per-chunk launches
                                       # against one launch with barriers
  python -m experiments.bench_ops --op=decode_attention --batch=8 --seq_len=131072 \
      --heads=16 --value_dim=128 --tilings="default,min_programs=1024"   # L = seq_len, D = value_dim

Prints one JSON object (the last stdout line) with the configuration and the timings.
Each op registers a function in `BENCHMARKS` taking the parsed flags and returning a dict.
"""

from __future__ import annotations

import os

from typing import Any, Callable

from absl import flags
import jax

from experiments import cli
from experiments import common
from experiments import configs
from sdm_jax.evaluation import attention_benchmarks
from sdm_jax.evaluation import gdn_benchmarks
from sdm_jax.evaluation import peer_benchmarks
from sdm_jax.evaluation import row_chain
from sdm_jax.evaluation import row_traffic
from sdm_jax.evaluation import sdm_benchmarks
from sdm_jax.evaluation import step_benchmarks
from sdm_jax.evaluation import tiling
from sdm_jax.evaluation import topk_benchmarks
from sdm_jax.ops import gated_delta
from sdm_jax.ops import product_key
from sdm_jax.training import records

_OP = flags.DEFINE_string("op", "gdn", "Which op to time: one of the keys of BENCHMARKS.")
_BATCH = flags.DEFINE_integer("batch", 4, "Batch size B.")
_SEQ_LEN = flags.DEFINE_integer("seq_len", 4096, "Sequence length T.")
_HEADS = flags.DEFINE_integer("heads", 8, "Heads H.")
_KEY_DIM = flags.DEFINE_integer("key_dim", 64, "Key dim K (GDN).")
_VALUE_DIM = flags.DEFINE_integer("value_dim", 128, "Value dim V / Dv.")
_SLOTS = flags.DEFINE_integer("sdm_slots", 65536, "Memory slots N per head (SDM).")
_WRITES = flags.DEFINE_integer("sdm_writes", 64, "Slots written per token W (SDM).")
_READS = flags.DEFINE_integer("sdm_reads", 64, "Slots read per token R (SDM).")
_CHUNK = flags.DEFINE_integer("chunk_size", 64, "Chunk size C.")
_DTYPE = flags.DEFINE_enum("dtype", "bfloat16", ["bfloat16", "float32"], "Input dtype.")
_IMPL = flags.DEFINE_string("impl", "auto", "impl= passed to the op.")
_WARMUP = flags.DEFINE_integer("warmup", 2, "Untimed calls before timing.")
_REPEATS = flags.DEFINE_integer("repeats", 10, "Timed calls; the median is reported.")
_GDN_STATE_PASS = flags.DEFINE_enum(
    "gdn_state_pass", None, list(gated_delta.STATE_PASSES),
    "With --impl=chunked (or auto): how the GDN path finds chunk start states (XLA scan or "
    "the Pallas state kernel); default: what the op picks here (the kernel on a GPU).")
_GDN_BACKWARD = flags.DEFINE_enum(
    "gdn_backward", "pallas", list(gated_delta.PALLAS_BACKWARDS),
    "With --impl=pallas (or auto on a GPU), and for gdn_tiling: how the GDN Pallas path finds "
    "gradients (through the chunked XLA path, or the backward kernels; gdn_tiling times "
    "fwd+bwd only for the latter).")

_SDM_ERROR = flags.DEFINE_enum("sdm_error", "shared", ["shared", "per_slot"],
                               "Error form of the sparse delta rule (SDM).")
_SDM_PHASES = flags.DEFINE_bool("sdm_phases", True,
                                "Also time phase 1 and phase 2 of the chunked SDM op alone.")
_TABLE_DTYPE = flags.DEFINE_enum(
    "table_dtype", None, ["float32", "bfloat16"],
    "SDM table storage dtype (sdm: default float32; sdm_layer: the layer's default, "
    "bfloat16 on GPU for bfloat16 activations).")
_MODEL_DIM = flags.DEFINE_integer("model_dim", 2048, "Model width d (sdm_layer; Dv = d / H).")
_TOP_OPS = flags.DEFINE_integer(
    "top_ops", 0, "gdn, gdn_fla, sdm, sdm_layer, train_step: also list this many costliest "
    "device ops of the forward and forward+backward (a profiler trace; empty on CPU).")
_TOPK_IMPL = flags.DEFINE_enum("topk_impl", "auto", list(product_key.IMPLS),
                               "Product-key top-k implementation (sdm_layer).")

BENCHMARKS: dict[str, Callable[[], dict[str, Any]]] = {}


def _gdn_from_flags() -> dict[str, Any]:
  return gdn_benchmarks.benchmark(
      batch=_BATCH.value, seq_len=_SEQ_LEN.value, heads=_HEADS.value, key_dim=_KEY_DIM.value,
      value_dim=_VALUE_DIM.value, chunk_size=_CHUNK.value, dtype=_DTYPE.value,
      impl=_IMPL.value, warmup=_WARMUP.value, repeats=_REPEATS.value,
      state_pass=_GDN_STATE_PASS.value, pallas_backward=_GDN_BACKWARD.value,
      top_ops=_TOP_OPS.value)


BENCHMARKS["gdn"] = _gdn_from_flags


def _gdn_fla_from_flags() -> dict[str, Any]:
  return peer_benchmarks.benchmark_fla_gdn(
      batch=_BATCH.value, seq_len=_SEQ_LEN.value, heads=_HEADS.value, key_dim=_KEY_DIM.value,
      value_dim=_VALUE_DIM.value, dtype=_DTYPE.value, warmup=_WARMUP.value,
      repeats=_REPEATS.value, chunk_size=_CHUNK.value, top_ops=_TOP_OPS.value)


BENCHMARKS["gdn_fla"] = _gdn_fla_from_flags

_TILINGS = flags.DEFINE_list(
    "tilings", ["default"],
    "sdm_tiling, gdn_tiling, topk: Pallas tilings to time, each 'default' or "
    "'field=value;...' over the kernels' KernelConfig (sdm: scan_pallas, fields block_cols, "
    "row_tile, group_entries, num_warps, num_stages, l2_hints, ...; gdn: chunk_pallas, "
    "fields block_v, state_block_v, prepare_warps, output_warps, num_stages, ...; topk: "
    "topk_pallas, fields block_rows, num_warps, half_select, group_size, pick, "
    "final_select (frontier, tournament, threshold), lazy_tail, exact_order, "
    "float_group_bests; "
    "row_traffic: fields block_rows, block_cols, num_warps; row_chain: the same and "
    "programs; "
    "decode_attention: decode_pallas, fields block_k, num_warps, num_stages, min_programs).")


def _gdn_tiling_from_flags() -> dict[str, Any]:
  return gdn_benchmarks.benchmark_tilings(
      tilings=_TILINGS.value, batch=_BATCH.value, seq_len=_SEQ_LEN.value, heads=_HEADS.value,
      key_dim=_KEY_DIM.value, value_dim=_VALUE_DIM.value, chunk_size=_CHUNK.value,
      dtype=_DTYPE.value, pallas_backward=_GDN_BACKWARD.value, warmup=_WARMUP.value,
      repeats=_REPEATS.value)


BENCHMARKS["gdn_tiling"] = _gdn_tiling_from_flags

def _bench_sdm() -> dict[str, Any]:
  return sdm_benchmarks.benchmark(
      batch=_BATCH.value, seq_len=_SEQ_LEN.value, heads=_HEADS.value, slots=_SLOTS.value,
      value_dim=_VALUE_DIM.value, writes=_WRITES.value, reads=_READS.value,
      chunk_size=_CHUNK.value, dtype=_DTYPE.value, impl=_IMPL.value, error=_SDM_ERROR.value,
      table_dtype=_TABLE_DTYPE.value or "float32", warmup=_WARMUP.value,
      repeats=_REPEATS.value, phases=_SDM_PHASES.value, top_ops=_TOP_OPS.value)


BENCHMARKS["sdm"] = _bench_sdm


def _bench_sdm_layer() -> dict[str, Any]:
  return sdm_benchmarks.benchmark_layer(
      batch=_BATCH.value, seq_len=_SEQ_LEN.value, model_dim=_MODEL_DIM.value,
      heads=_HEADS.value, slots=_SLOTS.value, writes=_WRITES.value, reads=_READS.value,
      chunk_size=_CHUNK.value, dtype=_DTYPE.value, impl=_IMPL.value, error=_SDM_ERROR.value,
      table_dtype=_TABLE_DTYPE.value, topk_impl=_TOPK_IMPL.value, warmup=_WARMUP.value,
      repeats=_REPEATS.value, top_ops=_TOP_OPS.value)


BENCHMARKS["sdm_layer"] = _bench_sdm_layer


def _bench_sdm_tiling() -> dict[str, Any]:
  return sdm_benchmarks.benchmark_tilings(
      tilings=_TILINGS.value, batch=_BATCH.value, seq_len=_SEQ_LEN.value, heads=_HEADS.value,
      slots=_SLOTS.value, value_dim=_VALUE_DIM.value, writes=_WRITES.value,
      reads=_READS.value, chunk_size=_CHUNK.value, dtype=_DTYPE.value,
      table_dtype=_TABLE_DTYPE.value or "bfloat16", warmup=_WARMUP.value,
      repeats=_REPEATS.value)


BENCHMARKS["sdm_tiling"] = _bench_sdm_tiling


def _row_probe(probe) -> dict[str, Any]:
  """A row probe (`row_traffic`, `row_chain`) at phase 2's shapes: B*H tables of N rows of
  Dv, C*W rows per chunk, T / C chunks, at each tiling of its `Tiling`."""
  return probe.benchmark(
      groups=_BATCH.value * _HEADS.value, num_slots=_SLOTS.value, value_dim=_VALUE_DIM.value,
      rows_per_chunk=_CHUNK.value * _WRITES.value, num_chunks=_SEQ_LEN.value // _CHUNK.value,
      dtype=_DTYPE.value,
      tilings=[tiling.parse_tiling(t, probe.Tiling()) for t in _TILINGS.value],
      warmup=_WARMUP.value, repeats=_REPEATS.value)


# Phase 2's access pattern alone (random rows in column slabs), one launch against launches
# per chunk; and its gather -> scatter recurrence, launches per chunk against one persistent
# launch with barriers.
BENCHMARKS["row_traffic"] = lambda: _row_probe(row_traffic)
BENCHMARKS["row_chain"] = lambda: _row_probe(row_chain)

_TOPK_ROWS = flags.DEFINE_list("topk_rows", ["65536", "8"], "Rows of scores (topk).")
_TOPK_SUB_KEYS = flags.DEFINE_list("topk_sub_keys", ["256", "512", "1024"],
                                   "Sub-keys S per half (topk).")
_TOPK_K = flags.DEFINE_list("topk_k", ["32", "64"], "Slots selected per row (topk).")


def _bench_topk() -> dict[str, Any]:
  ints = lambda values: [int(v) for v in values]  # noqa: E731
  return topk_benchmarks.benchmark(
      rows=ints(_TOPK_ROWS.value), sub_keys=ints(_TOPK_SUB_KEYS.value), ks=ints(_TOPK_K.value),
      dtype=_DTYPE.value, tilings=_TILINGS.value, warmup=_WARMUP.value,
      repeats=_REPEATS.value)


BENCHMARKS["topk"] = _bench_topk

_WINDOW = flags.DEFINE_integer("window", None, "Keys per query (decode_attention; None: full).")


def _bench_decode_attention() -> dict[str, Any]:
  return attention_benchmarks.benchmark(
      batch=_BATCH.value, cache_len=_SEQ_LEN.value, heads=_HEADS.value,
      head_dim=_VALUE_DIM.value, dtype=_DTYPE.value, window=_WINDOW.value,
      tilings=_TILINGS.value, warmup=_WARMUP.value, repeats=_REPEATS.value)


BENCHMARKS["decode_attention"] = _bench_decode_attention


_TRAIN_CONFIGS = flags.DEFINE_list(
    "train_configs", ["gdn_small", "sdm_small"],
    "train_step: language-model configs (experiments/configs) whose training step is timed, "
    "one after another in this process, each at its own train.batch_size and seq_len.")


_HLO_DIR = flags.DEFINE_string(
    "hlo_dir", None, "train_step: also write each config's compiled step as "
    "<config>.hlo.txt here (for `experiments.hlo_launches --profile`).")


def _bench_train_step() -> dict[str, Any]:
  results = []
  if _HLO_DIR.value:
    os.makedirs(_HLO_DIR.value, exist_ok=True)
  for name in _TRAIN_CONFIGS.value:
    config = configs.get_config(name)
    if config.get("kind", "lm") != "lm":
      raise ValueError(f"--train_configs takes language-model configs (kind 'lm'); {name!r} "
                       f"is of kind {config.kind!r}")
    model_config, train_config, _ = common.lm_configs(config)
    results.append({"config": name, **step_benchmarks.benchmark_train_step(
        model_config, train_config, warmup=_WARMUP.value, repeats=_REPEATS.value,
        top_ops=_TOP_OPS.value,
        hlo_path=_HLO_DIR.value and os.path.join(_HLO_DIR.value, f"{name}.hlo.txt"))})
  return {"results": results}


BENCHMARKS["train_step"] = _bench_train_step


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
  print(records.dumps(result))


if __name__ == "__main__":
  cli.run(main)
