"""The programs that the static kernel checks build, and their flags (importing this module
defines them): one op's forward and backward through its Pallas kernels, as a function and
abstract arguments, at the given shapes and tiling. `experiments.triton_ir` lowers a program
to the Triton IR of its kernels (pip's Triton compiles that); `experiments.xla_build`
compiles it as XLA does for an H200, without a GPU.

  --op=sdm        SDM's phase 2 in the shared error form, bf16 table
  --op=sdm_layer  the whole SDM layer as a GPU runs it (projections, the top-k kernel,
                  phase 1 with its pair-weight kernels, phase 2), bf16
  --op=gdn        the chunked gated delta rule with its backward kernels, bf16
  --op=topk       the product-key top-k, float32 scores
  --op=train_step one training step of a language-model config (`--train_config`, at its
                  batch and sequence length; the optimizer update included), on a mesh of
                  one device

While a program is traced, `platform.on_gpu` answers True, so every op picks what it picks
on a GPU. The chunked kernels' per-chunk shapes do not depend on T, so a short sequence
gives the kernels of a long one.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, NamedTuple
from unittest import mock

from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

from pallas_kernels import platform
from pallas_kernels.gated_delta import chunk_pallas
from pallas_kernels.product_key import topk_pallas
from pallas_kernels.sparse_delta import scan_pallas
from sdm_jax.evaluation import sdm_benchmarks
from sdm_jax.evaluation import tiling
from sdm_jax.layers.sparse_delta_memory import SparseDeltaMemory

OPS = ("sdm", "sdm_layer", "gdn", "topk", "train_step")

_OP = flags.DEFINE_enum("op", "sdm", list(OPS), "Which kernel family (or the SDM layer's "
                        "kernels).")
_BATCH = flags.DEFINE_integer("batch", 16, "Sequences (sdm: one head each; gdn: B).")
_SEQ_LEN = flags.DEFINE_integer("seq_len", 256, "Tokens per sequence.")
_SLOTS = flags.DEFINE_integer("sdm_slots", 16384, "sdm: slots N (a perfect square).")
_WRITES = flags.DEFINE_integer("sdm_writes", 64, "sdm: W.")
_READS = flags.DEFINE_integer("sdm_reads", 64, "sdm: R.")
_MODEL_DIM = flags.DEFINE_integer("model_dim", 512, "sdm_layer: d (one head: Dv = d).")
_VALUE_DIM = flags.DEFINE_integer("value_dim", 512, "Dv (gdn: V).")
_HEADS = flags.DEFINE_integer("heads", 4, "gdn: H.")
_KEY_DIM = flags.DEFINE_integer("key_dim", 64, "gdn: K.")
_TOPK_ROWS = flags.DEFINE_integer("topk_rows", 65536, "topk: rows of scores.")
_TOPK_SUB_KEYS = flags.DEFINE_integer("topk_sub_keys", 512, "topk: S (2S scores per row).")
_TOPK_K = flags.DEFINE_integer("topk_k", 32, "topk: k.")
_CHUNK = flags.DEFINE_integer("chunk_size", 16, "C (sdm, gdn).")
_TRAIN_CONFIG = flags.DEFINE_string("train_config", "sdm_small", "train_step: a language-"
                                    "model config of experiments/configs.")
_TILING = flags.DEFINE_string("tiling", "default",
                              "'default' or 'field=value;...' over the family's KernelConfig "
                              "(scan_pallas, chunk_pallas or topk_pallas).")


class Program(NamedTuple):
  """fn(*args): one op's loss and its gradients through its kernels; args are pytrees of
  ShapeDtypeStructs (a training step's with the shardings its jit asks for); config: the
  kernel family's KernelConfig (None for the layer and the step, which take each family's
  default)."""
  fn: Callable[..., Any]
  args: tuple
  config: Any = None


@contextlib.contextmanager
def as_on_gpu():
  """Every op picks what it picks on a GPU while this is open (`platform.on_gpu`)."""
  with mock.patch.object(platform, "on_gpu", lambda: True):
    yield


def sdm_program(*, batch: int, seq_len: int, slots: int, value_dim: int, writes: int,
                reads: int, chunk_size: int, config: scan_pallas.KernelConfig) -> Program:
  """SDM phase 2's forward and backward: gradients of the table and the plan."""
  inputs, plan_fn = sdm_benchmarks.kernel_planner(
      batch=batch, seq_len=seq_len, slots=slots, value_dim=value_dim, writes=writes,
      reads=reads, chunk_size=chunk_size)
  plan = jax.eval_shape(plan_fn, *inputs[1:])
  memory = jax.ShapeDtypeStruct(inputs.memory.shape, inputs.memory.dtype)

  def loss(memory, coefs, ids):
    out, _ = scan_pallas.scan_chunks(memory, plan._replace(ids=ids, coefs=coefs),
                                     error="shared", config=config, interpret=False)
    return jnp.sum(out)

  return Program(jax.grad(loss, argnums=(0, 1)), (memory, plan.coefs, plan.ids), config)


def sdm_layer_program(*, batch: int, seq_len: int, model_dim: int, slots: int, writes: int,
                      reads: int, chunk_size: int) -> Program:
  """The SDM layer's forward and backward as a GPU runs it (impl "auto", bf16 activations,
  gradients w.r.t. every parameter and the input)."""
  layer = SparseDeltaMemory(model_dim=model_dim, num_heads=1, num_slots=slots,
                            num_writes=writes, num_reads=reads, chunk_size=chunk_size,
                            dtype=jnp.bfloat16)
  x = jax.ShapeDtypeStruct((batch, seq_len, model_dim), jnp.bfloat16)
  positions = jnp.arange(seq_len)
  with as_on_gpu():
    params = jax.eval_shape(layer.init, jax.random.PRNGKey(0), x, positions)

  def loss(params, x):
    return jnp.sum(layer.apply(params, x, positions).astype(jnp.float32))

  return Program(jax.grad(loss, argnums=(0, 1)), (params, x))


def gdn_program(*, batch: int, seq_len: int, heads: int, key_dim: int, value_dim: int,
                chunk_size: int, config: chunk_pallas.KernelConfig) -> Program:
  """The gated delta rule's forward and backward (bf16 inputs, float32 state)."""
  shape = lambda *dims, dtype=jnp.bfloat16: jax.ShapeDtypeStruct(dims, dtype)  # noqa: E731
  tokens = (batch, seq_len, heads)
  args = (shape(*tokens, key_dim), shape(*tokens, key_dim), shape(*tokens, value_dim),
          shape(*tokens, dtype=jnp.float32), shape(*tokens),
          shape(batch, heads, key_dim, value_dim, dtype=jnp.float32))

  def loss(*args):
    out, final = chunk_pallas.gated_delta_rule(
        *args, scale=key_dim ** -0.5, chunk_size=chunk_size, config=config, interpret=False)
    return jnp.sum(out.astype(jnp.float32)) + jnp.sum(final)

  return Program(jax.grad(loss, argnums=tuple(range(6))), args, config)


def topk_program(*, rows: int, sub_keys: int, k: int, config: topk_pallas.KernelConfig
                 ) -> Program:
  """The product-key top-k's kernel and its backward (a scatter in XLA)."""
  def loss(scores):
    _, logits = topk_pallas.product_key_topk(scores, k, config=config, interpret=False)
    return jnp.sum(logits)

  return Program(jax.grad(loss), (jax.ShapeDtypeStruct((rows, 2 * sub_keys), jnp.float32),),
                 config)


def train_step_program(config_name: str, device: jax.Device) -> Program:
  """One training step of the named language-model config (`make_train_step`: forward,
  backward, gradient norm, optimizer update) on a mesh of `device` alone, at the config's
  batch_size and seq_len (tokens [B, T + 1])."""
  # Imported here: the step's modules (configs, optimizer, sharding) are not the kernels'.
  from experiments import common, configs  # pylint: disable=g-import-not-at-top
  from sdm_jax import sharding  # pylint: disable=g-import-not-at-top
  from sdm_jax.models.lm import LM, init_function  # pylint: disable=g-import-not-at-top
  from sdm_jax.training import train_step  # pylint: disable=g-import-not-at-top
  from sdm_jax.training.lm_training import lm_loss_fn  # pylint: disable=g-import-not-at-top
  from sdm_jax.training.optim import optimizer_for  # pylint: disable=g-import-not-at-top

  config = configs.get_config(config_name)
  if config.get("kind", "lm") != "lm":
    raise ValueError(f"--train_config takes language-model configs (kind 'lm'); "
                     f"{config_name!r} is of kind {config.kind!r}")
  model_config, train_config, _ = common.lm_configs(config)
  model, optimizer = LM(model_config), optimizer_for(train_config)
  mesh = jax.sharding.Mesh(np.array([device]).reshape((1,) * len(sharding.MESH_AXES)),
                           sharding.MESH_AXES)
  with as_on_gpu():
    init = init_function(model, train_config.seq_len)
    state = jax.eval_shape(lambda rng: train_step.TrainState.create(init(rng), optimizer),
                           jax.random.PRNGKey(0))
  shardings = train_step.state_shardings(state, mesh)
  state = jax.tree.map(lambda leaf, where: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype,
                                                                sharding=where),
                       state, shardings)
  batch = jax.ShapeDtypeStruct((train_config.batch_size, train_config.seq_len + 1), jnp.int32,
                               sharding=train_step.batch_sharding(mesh))
  step = train_step.make_train_step(lm_loss_fn(model), optimizer, mesh, shardings)
  return Program(step, (state, batch))


def sdm_arguments_from_flags() -> dict[str, Any]:
  """`sdm_program`'s keyword arguments from the flags (shapes and tiling)."""
  return dict(batch=_BATCH.value, seq_len=_SEQ_LEN.value, slots=_SLOTS.value,
              value_dim=_VALUE_DIM.value, writes=_WRITES.value, reads=_READS.value,
              chunk_size=_CHUNK.value,
              config=sdm_benchmarks.parse_tiling(_TILING.value, _VALUE_DIM.value))


def program_from_flags(device: jax.Device | None = None) -> tuple[str, Program]:
  """(op, its Program) at the flags' shapes and tiling; device: where a training step's
  mesh lies (default: JAX's first device)."""
  op = _OP.value
  if op == "train_step":
    return op, train_step_program(_TRAIN_CONFIG.value, device or jax.devices()[0])
  if op == "sdm":
    program = sdm_program(**sdm_arguments_from_flags())
  elif op == "sdm_layer":
    program = sdm_layer_program(
        batch=_BATCH.value, seq_len=_SEQ_LEN.value, model_dim=_MODEL_DIM.value,
        slots=_SLOTS.value, writes=_WRITES.value, reads=_READS.value, chunk_size=_CHUNK.value)
  elif op == "gdn":
    program = gdn_program(
        batch=_BATCH.value, seq_len=_SEQ_LEN.value, heads=_HEADS.value,
        key_dim=_KEY_DIM.value, value_dim=_VALUE_DIM.value, chunk_size=_CHUNK.value,
        config=tiling.parse_tiling(_TILING.value,
                                   chunk_pallas.default_config(_VALUE_DIM.value, jnp.bfloat16)))
  else:
    program = topk_program(**topk_arguments_from_flags())
  return op, program


def topk_arguments_from_flags() -> dict[str, Any]:
  """`topk_program`'s keyword arguments from the flags (shape and tiling)."""
  return dict(rows=_TOPK_ROWS.value, sub_keys=_TOPK_SUB_KEYS.value, k=_TOPK_K.value,
              config=tiling.parse_tiling(_TILING.value, topk_pallas.default_config(
                  _TOPK_SUB_KEYS.value, _TOPK_K.value, _TOPK_ROWS.value)))
