"""Times decoding: one mixer layer's step, and whole models' tokens/s.

  python -m experiments.bench_decode --mixers=M,G,S,A --batches=1,8 \
      --contexts=8192,32768,131072 --models=sdm_small,gdn_small,hybrid_attn_small \
      --model_contexts=2048,32768

For each mixer letter, batch and context length: builds a one-layer LMConfig at
--d_model and times the decode step of one token against a full cache, median of
--repeats calls after --warmup, one jitted call per token (host dispatch included), and
per token inside jitted 32-step scans, each call waited for and back to back (the latter
is timed as the SDPA peer's CUDA graph replays are: no host round trip between calls). For
each named experiment config (--models; empty to skip), batch and --model_contexts: the
whole model's greedy decoding, --model_steps tokens in one jitted `lax.scan` as
`generate` runs them (`sdm_jax.evaluation.decode_benchmarks`); the --sdm_impl,
--sdm_topk_impl and --attention_decode_impl flags given apply to both. With --sdpa_peer,
also PyTorch's SDPA decode step with its projections at every batch and context, the peer
of the A mixer (`sdm_jax.evaluation.peer_benchmarks`; needs PyTorch with CUDA). Prints a
table and, last, one JSON object.
"""

from __future__ import annotations

import dataclasses

from absl import flags
import jax

from experiments import cli
from experiments import common
from experiments import configs
from sdm_jax.evaluation import peer_benchmarks
from sdm_jax.evaluation.decode_benchmarks import time_decode, time_generation
from sdm_jax.models.config import LMConfig
from sdm_jax.models.mixers import MIXERS
from sdm_jax.training import records

_MIXERS = flags.DEFINE_list("mixers", ["M", "G", "S", "A"], "Mixer letters to time.")
_BATCHES = flags.DEFINE_list("batches", ["1", "8"], "Batch sizes.")
_CONTEXTS = flags.DEFINE_list("contexts", ["8192", "32768", "131072"], "Context lengths.")
_D_MODEL = flags.DEFINE_integer("d_model", 2048, "Model width d.")
_HEADS = flags.DEFINE_integer("heads", 16, "Attention heads (head dim d / heads).")
_WINDOW = flags.DEFINE_integer("window", 2048, "Keys per query of the S mixer.")
_GDN_HEADS = flags.DEFINE_integer("gdn_heads", 16, "GDN heads.")
_GDN_HEAD_DIM = flags.DEFINE_integer("gdn_head_dim", 64, "GDN key dim K per head.")
_GDN_EXPAND_V = flags.DEFINE_float("gdn_expand_v", 2.0, "GDN value dim = expand_v * K.")
_SDM_HEADS = flags.DEFINE_integer("sdm_heads", 1, "SDM heads.")
_SDM_SLOTS = flags.DEFINE_integer("sdm_slots", 262_144, "SDM slots N per head.")
_SDM_WRITES = flags.DEFINE_integer("sdm_writes", 64, "SDM slots written per token W.")
_SDM_READS = flags.DEFINE_integer("sdm_reads", 64, "SDM slots read per token R.")
_SDM_IMPL = flags.DEFINE_string("sdm_impl", "auto", "SDM op impl (the decode step: \"auto\" = "
                                "the fused kernel on GPU, \"chunked\" = the XLA step).")
_SDM_TOPK_IMPL = flags.DEFINE_string("sdm_topk_impl", "auto", "SDM product-key top-k impl.")
_ATTENTION_DECODE_IMPL = flags.DEFINE_string(
    "attention_decode_impl", "auto", "A/S decode attention impl (sdm_jax.ops.decode_attention).")
_TOP_OPS = flags.DEFINE_integer("top_ops", 0, "Also list this many costliest device ops of "
                                "a scanned step, per token (a profiler trace; empty on CPU).")
_MODELS = flags.DEFINE_list("models", ["sdm_small", "gdn_small", "hybrid_attn_small"],
                            "Experiment configs whose whole-model decoding is timed (tokens/s); "
                            "empty to skip.")
_MODEL_CONTEXTS = flags.DEFINE_list("model_contexts", ["2048", "32768"],
                                    "Context lengths of the whole-model timing.")
_MODEL_STEPS = flags.DEFINE_integer("model_steps", 64, "Tokens per timed whole-model scan.")
_DTYPE = flags.DEFINE_enum("compute_dtype", "bfloat16", ["bfloat16", "float32"],
                           "Activation dtype (parameters are float32).")
_CAST_KERNELS = flags.DEFINE_bool(
    "cast_kernels", True, "Dense kernels stored in the compute dtype, as `generate` decodes "
    "(the same outputs, half the weight bytes per step in bf16); false: float32 kernels.")
_SDPA_PEER = flags.DEFINE_bool(
    "sdpa_peer", False, "Also time PyTorch's scaled_dot_product_attention decode step with "
    "its projections (--d_model, --heads) at every batch and context: the A mixer's peer.")
_WARMUP = flags.DEFINE_integer("warmup", 3, "Untimed steps.")
_REPEATS = flags.DEFINE_integer("repeats", 20, "Timed steps; the median is reported.")


def layer_config(kind: str, context: int) -> LMConfig:
  return LMConfig(
      d_model=_D_MODEL.value, num_layers=1, pattern=kind, num_heads=_HEADS.value,
      window=_WINDOW.value, max_seq_len=max(context + 1, _WINDOW.value),
      compute_dtype=_DTYPE.value, gdn_heads=_GDN_HEADS.value,
      gdn_head_dim=_GDN_HEAD_DIM.value, gdn_expand_v=_GDN_EXPAND_V.value,
      sdm_heads=_SDM_HEADS.value, sdm_slots=_SDM_SLOTS.value, sdm_writes=_SDM_WRITES.value,
      sdm_reads=_SDM_READS.value, sdm_impl=_SDM_IMPL.value, sdm_topk_impl=_SDM_TOPK_IMPL.value,
      attention_decode_impl=_ATTENTION_DECODE_IMPL.value)


def main(argv):
  del argv
  results = []
  for kind in _MIXERS.value:
    if kind not in MIXERS:
      raise ValueError(f"--mixers has unknown letter {kind!r}; known: {sorted(MIXERS)}")
    for batch in map(int, _BATCHES.value):
      for context in map(int, _CONTEXTS.value):
        result = time_decode(layer_config(kind, context), batch, context,
                             warmup=_WARMUP.value, repeats=_REPEATS.value,
                             top_ops=_TOP_OPS.value, cast_kernels=_CAST_KERNELS.value)
        results.append(result)
        print(f"{kind} B={batch:<2d} context={context:>7,d}: {result['step_ms']:8.3f} ms/token, "
              f"{result['scan_step_ms']:.3f} in a scan, "
              f"{result['scan_back_to_back_ms']:.3f} in scans back to back "
              f"(cache {result['cache_bytes_per_sequence'] / 2**20:,.1f} MiB/sequence)",
              flush=True)
  peers = []
  for batch in map(int, _BATCHES.value) if _SDPA_PEER.value else ():
    for context in map(int, _CONTEXTS.value):
      result = peer_benchmarks.benchmark_sdpa_decode(
          batch=batch, context=context, d_model=_D_MODEL.value, heads=_HEADS.value,
          warmup=_WARMUP.value, repeats=_REPEATS.value)
      peers.append(result)
      print(f"SDPA B={batch:<2d} context={context:>7,d}: {result['step_ms']:8.3f} ms/token, "
            f"{result['back_to_back_ms']:.3f} back to back, "
            f"{result['cuda_graph_step_ms']:.3f} as a CUDA graph", flush=True)
  # The impl flags given on the command line apply to the whole models too; the others
  # keep each config's own choice.
  impl_overrides = {flag.name: flag.value for flag in (_SDM_IMPL, _SDM_TOPK_IMPL,
                                                       _ATTENTION_DECODE_IMPL) if flag.present}
  models = []
  for name in _MODELS.value:
    model_config = dataclasses.replace(common.lm_configs(configs.get_config(name))[0],
                                       **impl_overrides)
    for batch in map(int, _BATCHES.value):
      for context in map(int, _MODEL_CONTEXTS.value):
        result = time_generation(model_config, batch, context, steps=_MODEL_STEPS.value,
                                 cast_kernels=_CAST_KERNELS.value)
        models.append({"model": name, **result})
        print(f"{name} B={batch:<2d} context={context:>7,d}: {result['tokens_per_s']:10,.0f} "
              f"tokens/s ({result['step_ms']:.3f} ms/step)", flush=True)
  print(records.dumps({"device": str(jax.devices()[0].device_kind), "jax": jax.__version__,
                       "d_model": _D_MODEL.value, "results": results, "models": models,
                       "peers": peers}))


if __name__ == "__main__":
  cli.run(main)
