"""Compiles one op's program as XLA does for an H200, on a machine without a GPU, and writes
what XLA built: every kernel's cubin (the Pallas kernels through XLA's own Triton, and XLA's
fusions), the PTX, and the optimized HLO.

  # once, in an environment of its own: JAX's CUDA plugin of the same JAX version
  python3 -m venv /tmp/gvenv && /tmp/gvenv/bin/pip install "jax[cuda13]==0.10.2" \\
      && /tmp/gvenv/bin/pip install -e .
  /tmp/gvenv/bin/python -m experiments.xla_build --op=topk --binaries_dir=/tmp/xla_topk \\
      --tiling="exact_order=false"
  /path/to/triton-venv/bin/python experiments/triton_ir_stats.py /tmp/xla_topk \\
      --functions=topk_kernel [--live=<CUDA 13's nvdisasm>]

`--op`, the shapes and `--tiling` are `experiments.kernel_programs`' (as for
`experiments.triton_ir`). The compile is JAX's ahead-of-time one for a compile-only device
(`jax.experimental.topologies.get_topology_desc("cuda", target_config=...)`) that the
target config describes (`--target_config`, default `experiments/gpu_specs/h200.txtpb`);
the persistent compilation cache is on in a temporary folder, and
`cached_binaries.extract` pulls the kernels out of the cache entry, as it does from a
cache filled on the GPU.

It also counts what one run of the compiled program launches (`hlo_launches.
kernel_launches`: XLA's fusions, library calls and Pallas kernels, loop bodies times their
trip counts; `experiments.hlo_launches` also weighs them by bytes and source line), which
`--op=train_step --train_config=NAME` makes a whole training step's: at sdm_small and
gdn_small, 2,809 launches per step against 802 (WORKSPACE.md, issue 11, session 44).

`experiments/triton_ir.py` compiles the kernels with pip's Triton, which lays them out
differently (the top-k's default: 167 registers in pip's build, 119 on the H200). This
build agrees with the H200's where both were read (WORKSPACE.md, issue 12, session 44:
118 and 96 registers against the H200's 119 and 96), though the CPU machines' JAX (0.10.2)
is older than the H200's (0.11.2): its instruction counts were 3-4% higher and its loop
bodies up to 16% longer there.
"""

from __future__ import annotations

import os
import tempfile

from absl import flags
import jax
from jax.experimental import topologies

from experiments import cached_binaries
from experiments import cli
from experiments import hlo_launches
from experiments import kernel_programs
from experiments.kernel_programs import Program
from sdm_jax.training import records

H200_TARGET = os.path.join(os.path.dirname(__file__), "gpu_specs", "h200.txtpb")
HLO_FILE = "hlo.txt"

_TARGET_CONFIG = flags.DEFINE_string("target_config", H200_TARGET,
                                     "XLA's description of the GPU to compile for (a "
                                     "text proto, stream_executor's GpuTargetConfigProto).")


def compile_only_device(target_config: str) -> jax.Device:
  """A device to compile for that needs no GPU: the one of a topology that the target config
  (its text) describes. Needs JAX's CUDA plugin."""
  try:
    topology = topologies.get_topology_desc(
        "xla_build", "cuda", target_config=target_config, topology="1x1x1")
  except (RuntimeError, NotImplementedError) as error:  # no plugin, or an older one
    raise ValueError(
        f"compiling for a GPU without one needs JAX's CUDA plugin of this JAX "
        f"({jax.__version__}), e.g. pip install 'jax[cuda13]=={jax.__version__}' in an "
        f"environment of its own: {error}") from error
  return topology.devices[0]


def compiled_for(program: Program, device: jax.Device) -> jax.stages.Compiled:
  """The program compiled for `device` (ops picking what they pick on a GPU)."""
  sharding = jax.sharding.SingleDeviceSharding(device)
  args = jax.tree.map(lambda a: a if a.sharding is not None else jax.ShapeDtypeStruct(
      a.shape, a.dtype, sharding=sharding), program.args)
  jitted = program.fn if hasattr(program.fn, "trace") else jax.jit(program.fn)
  with kernel_programs.as_on_gpu():
    return jitted.trace(*args).lower(lowering_platforms=("cuda",)).compile()


def build(program: Program, device: jax.Device, out_dir: str) -> dict:
  """Compiles the program for the device (`compile_only_device`) and writes its cubins, PTX
  (`cached_binaries`' names) and optimized HLO (`HLO_FILE`) under out_dir. Returns
  {"files": [...], "launches": `kernel_launches` of the HLO}."""
  with tempfile.TemporaryDirectory() as cache_dir:
    # The cache is where a compiled executable's kernels can be read from; on for this
    # compile alone.
    saved = {name: getattr(jax.config, name) for name in (
        "jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
        "jax_persistent_cache_min_entry_size_bytes")}
    jax.config.update("jax_compilation_cache_dir", cache_dir)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    try:
      compiled = compiled_for(program, device)
    finally:
      for name, value in saved.items():
        jax.config.update(name, value)
    written = cached_binaries.extract(cache_dir, out_dir)
  files = [name for names in written.values() for name in names]
  if not any(name.endswith(".cubin") for name in files):
    raise ValueError(f"XLA's compile left no machine code in the cache ({len(written)} "
                     "entries)")
  hlo = compiled.as_text()
  with open(os.path.join(out_dir, HLO_FILE), "w") as f:
    f.write(hlo)
  return {"files": files + [HLO_FILE], "launches": hlo_launches.kernel_launches(hlo)}


def main(argv):
  del argv
  jax.config.update("jax_platforms", "cpu")  # the plugin finds no GPU to run on here
  with open(_TARGET_CONFIG.value) as f:
    target = f.read()
  device = compile_only_device(target)
  op, program = kernel_programs.program_from_flags(device)
  result = build(program, device, cached_binaries.BINARIES_DIR.value)
  kernels = sorted(name.split(".")[-2] for name in result["files"]
                   if name.endswith(".cubin") and name.count(".") >= 3)
  print(records.dumps({"op": op, "binaries_dir": cached_binaries.BINARIES_DIR.value,
                       "config": program.config and program.config._asdict(),
                       "jax": jax.__version__, "kernels": kernels,
                       "files": len(result["files"]), "launches": result["launches"]}))


if __name__ == "__main__":
  flags.mark_flag_as_required("binaries_dir")  # cached_binaries' flag: where the cubins go
  cli.run(main)
