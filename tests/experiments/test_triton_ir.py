"""The Triton IR dump of the kernel families (lowered for CUDA on CPU) and the parts of its
stats script that need no Triton."""

from __future__ import annotations

import importlib.util
import os

import jax
import pytest

from experiments import kernel_programs
from experiments import triton_ir
from experiments import triton_ir_stats
from pallas_kernels.gated_delta import chunk_pallas
from pallas_kernels.product_key import topk_pallas
from pallas_kernels.sparse_delta import scan_pallas

TINY = dict(batch=1, seq_len=32, slots=256, value_dim=32, writes=4, reads=4, chunk_size=16)


BACKWARD_ROW_KERNELS = {"union": ["bwd_union_kernel"],
                        "separate": ["bwd_written_kernel", "bwd_read_kernel"]}


@pytest.mark.parametrize("backward_rows", scan_pallas.BACKWARD_ROWS)
def test_every_phase2_kernel_lowers_to_one_module(backward_rows):
  config = scan_pallas.default_config(32)._replace(backward_rows=backward_rows)
  kernels = triton_ir.lowered_modules(kernel_programs.sdm_program(config=config, **TINY))
  assert [kernel.name for kernel in kernels] == [
      "fwd_gather_kernel", "fwd_dense_kernel", "fwd_scatter_kernel", "bwd_gather_kernel",
      "bwd_dense_kernel", *BACKWARD_ROW_KERNELS[backward_rows]]
  for kernel in kernels:
    assert kernel.ir.startswith(f"module @{kernel.name} {{")
    assert f"tt.func public @{kernel.name}" in kernel.ir
    # The gathers run on warps of their own (KernelConfig.gather_warps), so do the rows.
    own = (config.gather_config() if "gather" in kernel.name else
           config.backward_rows_config() if kernel.name in BACKWARD_ROW_KERNELS[backward_rows]
           else config)
    assert (kernel.num_warps, kernel.num_stages) == (own.num_warps, own.num_stages)
    stripped = triton_ir_stats._strip_locations(kernel.ir)  # pylint: disable=protected-access
    assert "#loc" not in stripped and "[unknown]" not in stripped
  scatter = [kernel.ir for kernel in kernels if kernel.name == "fwd_scatter_kernel"][0]
  assert "tt.dot" not in scatter  # the row tiles sum their segments without matmuls


def test_the_layer_lowers_as_on_a_gpu():
  """Under the GPU's choices the layer runs the top-k kernel (at any number of rows; the
  writes' and reads' selections share one module), then phase 1's pair-weight kernels
  (forward twice, QK and A; backward A's, a lane per write, then QK's) around phase 2's
  seven (the shared table's copies first)."""
  kernels = triton_ir.lowered_modules(kernel_programs.sdm_layer_program(
      batch=1, seq_len=32, model_dim=32, slots=256, writes=4, reads=4, chunk_size=16))
  names = [kernel.name for kernel in kernels]
  assert names[:3] == ["product_key_topk_kernel"] + ["pair_weights_fwd_kernel"] * 2
  assert names[3:10] == ["batch_copies_kernel", "fwd_gather_kernel", "fwd_dense_kernel",
                         "fwd_scatter_kernel", "bwd_gather_kernel", "bwd_dense_kernel",
                         "bwd_union_kernel"]
  assert names[10:] == ["pair_weights_own_writes_bwd_kernel", "pair_weights_bwd_kernel"]


def test_a_training_step_lowers_with_the_layers_kernels():
  """sdm_tiny's step as a GPU runs it, on a mesh of one device: the top-k kernel first,
  phase 2's kernels, the pair weights' backward last."""
  program = kernel_programs.train_step_program("sdm_tiny", jax.devices()[0])
  names = [kernel.name for kernel in triton_ir.lowered_modules(program)]
  assert names[0] == "product_key_topk_kernel"
  assert names[-1] == "pair_weights_bwd_kernel" and "bwd_union_kernel" in names


def test_the_gdn_and_topk_kernels_lower_too():
  config = chunk_pallas.default_config(32)
  kernels = triton_ir.lowered_modules(kernel_programs.gdn_program(
      batch=1, seq_len=32, heads=1, key_dim=16, value_dim=32, chunk_size=16, config=config))
  assert len(kernels) == 6 and all(k.ir.startswith("module @") for k in kernels)
  assert max(k.num_warps for k in kernels) == config.backward_warps
  topk = triton_ir.lowered_modules(kernel_programs.topk_program(
      rows=8, sub_keys=16, k=4, config=topk_pallas.KernelConfig()))
  assert [k.name for k in topk] == ["product_key_topk_kernel"]
  assert topk[0].num_warps == topk_pallas.KernelConfig().num_warps


def test_residency_follows_registers_shared_memory_and_warps():
  assert triton_ir_stats.programs_per_sm(255, 24576, 4) == 2  # 256 x 32 x 4 per program
  assert triton_ir_stats.programs_per_sm(96, 4096, 4) == 5
  assert triton_ir_stats.programs_per_sm(32, 0, 4) == 16  # then the 64-warp limit
  assert triton_ir_stats.programs_per_sm(32, 100 * 1024, 1) == 2  # shared memory
  assert triton_ir_stats.programs_per_sm(32, 0, 1) == 32  # 32 blocks per SM, not 64 warps


LISTING = """
        .size           k,(.L_x_4 - k)
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_0:
        /*0010*/                   IADD3 R2, R2, 0x1, RZ ;
        /*0020*/                   ISETP.GE.AND P0, PT, R2, 0x20, PT ;
        /*0030*/               @!P0 BRA `(.L_x_0) ;
        /*0040*/               @P1 BRA `(.L_x_1) ;
        /*0050*/                   STG.E [R4.64], R2 ;
.L_x_1:
.L_x_2:
        /*0060*/                   LDG.E R3, [R4.64] ;
        /*0070*/               @P2 BRA `(.L_x_2) ;
.L_x_3:
        /*0080*/                   BRA `(.L_x_3);
"""


def test_loop_bodies_span_each_backward_branch():
  """LISTING: a 3-instruction loop, a forward branch (not a loop), a 2-instruction loop,
  and the final self-jump (not a loop)."""
  assert triton_ir_stats.loop_bodies(LISTING) == [3, 2]


def test_pipes_of_each_loop_and_of_a_program_weighted_by_trips():
  """LISTING's instructions by the scheduler pipe that issues them; the second loop run 5
  times, the instruction at 0x50 (a branch's body) half the time."""
  pipe = triton_ir_stats.pipe_of
  assert [pipe(op) for op in ("ISETP", "SEL", "VIMNMX", "IMAD", "SHFL", "LDG", "BRA",
                              "ULDC")] == ["alu"] * 3 + ["fma", "shfl", "mem", "other",
                                                         "other"]
  assert triton_ir_stats.instruction_pipes(LISTING)[:3] == [(0, "alu"), (0x10, "alu"),
                                                            (0x20, "alu")]
  assert triton_ir_stats.loop_pipes(LISTING) == [
      {"alu": 2, "fma": 0, "shfl": 0, "mem": 0, "other": 1},
      {"alu": 0, "fma": 0, "shfl": 0, "mem": 1, "other": 1}]
  mix = triton_ir_stats.pipe_mix(LISTING, [(0x0, 0x40, 1), (0x50, 0x50, 0.5), (0x60, 0x70, 5)])
  assert mix["alu"] == 3 and mix["mem"] == 0.5 + 5 and mix["other"] == 2 + 5
  assert mix["cycles"]["alu"] == 3 * triton_ir_stats.CYCLES_PER_INSTRUCTION["alu"]


def _with_live_counts(listing: str, counts) -> str:
  """LISTING with `nvdisasm -plr -lrm count`'s trailing column: per instruction, `counts`'
  next general-register count (then predicate and uniform columns)."""
  counts, lines = iter(counts), []
  for line in listing.splitlines():
    if "/*0" in line:
      line = f"{line:<70}// |  {next(counts):>3}  |   1    |   4    |"
    lines.append(line)
  return "\n".join(lines)


def test_live_registers_name_the_peak_and_each_loops_own():
  """LISTING with 12 registers live before the first loop, up to 30 in its body, 41 and 39
  between the loops (the peak and one within 4 of it), 20 in the second loop."""
  report = triton_ir_stats.live_registers(
      _with_live_counts(LISTING, [12, 25, 30, 30, 41, 39, 20, 20, 5]))
  assert report == {"peak": 41, "peak_at": [(0x40, 0x50)],
                    "loops": [(0x10, 0x30, 30), (0x60, 0x70, 20)]}
  with pytest.raises(ValueError, match="life ranges"):
    triton_ir_stats.live_registers(LISTING)


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs Triton")
def test_stats_compile_a_dumped_kernel(tmp_path):
  config = scan_pallas.default_config(32)
  kernel = triton_ir.lowered_modules(kernel_programs.sdm_program(config=config, **TINY))[2]
  path = os.path.join(tmp_path, f"02_{kernel.name}.ttir")
  with open(path, "w") as f:
    f.write(kernel.ir)
  stats = triton_ir_stats.kernel_stats(path, config.num_warps)
  assert stats["registers"] > 0 and stats["instructions"] > 0 and stats["programs_per_sm"] >= 1
  assert stats["loop_bodies"] and max(stats["loop_bodies"]) < stats["instructions"]


def test_cubin_listings_split_by_function():
  sass = """
//--------------------- .text.bwd_union_kernel  --------------------------
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   EXIT ;
//--------------------- .text.fwd_gather_kernel --------------------------
        /*0000*/                   EXIT ;
"""
  functions = triton_ir_stats._split_functions(sass)  # pylint: disable=protected-access
  assert list(functions) == ["bwd_union_kernel", "fwd_gather_kernel"]
  assert functions["bwd_union_kernel"].count("/*00") == 2


def test_cubin_warps_come_from_each_functions_requested_threads():
  elf = """.nv.info.bwd_union_kernel
	<0x1>
	Attribute:	EIATTR_REQNTID
	Format:	EIFMT_SVAL
	Value:	0x80 0x1 0x1 
.nv.info.product_key_topk_kernel
	Attribute:	EIATTR_REQNTID
	Format:	EIFMT_SVAL
	Value:	0x20 0x1 0x1 
.nv.info
	Attribute:	EIATTR_CUDA_API_VERSION
"""
  threads = triton_ir_stats._requested_threads(elf)  # pylint: disable=protected-access
  assert threads == {"bwd_union_kernel": 128, "product_key_topk_kernel": 32}


def test_identical_copies_of_a_kernel_are_listed_once():
  """XLA's build repeats each kernel of a loop it unrolls: the same function, the same code."""
  union = dict(function="bwd_union_kernel", sass="LDG\nSTG\n")
  other = dict(function="bwd_dense_kernel", sass="HMMA\n")
  unlisted = dict(function=None, sass=None)
  stats = [union, other, dict(union), unlisted, dict(union), dict(unlisted)]
  assert triton_ir_stats.unique_kernels(stats) == [(union, 3), (other, 1), (unlisted, 1),
                                                   (unlisted, 1)]
