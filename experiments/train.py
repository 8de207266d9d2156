"""Trains a model on a corpus, evaluates it and prints a sample.

  python -m experiments.train                # the default config on the embedded corpus
  python -m experiments.train --config=experiments/configs/swa_tiny.py --workdir=/tmp/swa \
      --steps=200
  python -m experiments.train --config=experiments/configs/attn_tiny.py --data=my_texts/ \
      --config.train.peak_lr=1e-3
  python -m experiments.train --config=experiments/configs/maglev_tiny.py   # a Maglev model
  python -m experiments.train --data=fineweb_edu/ --config.data.tokenizer=gpt2 \
      --config.data.token_bytes=fineweb_edu/token_bytes.npy   # train.bin/val.bin of GPT-2 ids

Resumes from --workdir when it holds a checkpoint. The last stdout line is a JSON object
with `step`, `train_loss`, `val_bpb`, `unigram_bpb`, `tokens_per_s`, `mesh`, `param_bytes`,
`param_bytes_per_device`, `peak_bytes_per_device` (the largest peak of this process's
devices; null where the backend does not report it, as on CPU) and more; where the bytes
per token are unknown (ids without a tokenizer or data.token_bytes), `val_bpb` is null,
`val_bpb_unavailable` says why and `val_loss` (nats per token) stands in.

Several devices: `--config.train.mesh=data=2,fsdp=2,model=2` (see `TrainConfig.mesh`).
Several processes (hosts): run the same command in each with `--coordinator_address`,
`--num_processes` and `--process_id` (or under Slurm / Open MPI, which need none of them);
see README.md.
"""

from __future__ import annotations

import dataclasses
import os

from absl import flags
import jax
import jax.numpy as jnp

from experiments import cli
from experiments import common
from maglev_jax import model_kinds
from sdm_jax.data.tokenizer import prompt_ids, sample_text
from sdm_jax.evaluation import timing
from sdm_jax.metrics import unigram_bits_per_byte
from sdm_jax.training import distributed
from sdm_jax.training import records
from sdm_jax.training.run_data import load_data

DEFAULT_CONFIG = "sdm_tiny"
SAMPLE_PROMPT = "def "
# Without a tokenizer the sample continues the first validation ids.
SAMPLE_PROMPT_IDS = 4

_CONFIG = common.define_config_flag(DEFAULT_CONFIG)
_WORKDIR = flags.DEFINE_string("workdir", None, "Run directory (default: workdirs/<config>).")
_STEPS = flags.DEFINE_integer("steps", None, "Override train.steps.")
_DATA = flags.DEFINE_string("data", None, "Override data.path: a text file, a directory of "
                            "text files, a pre-tokenised .npy/.u16.bin/.u32.bin file, or a "
                            "directory holding train.bin and val.bin.")
_SAMPLE_TOKENS = flags.DEFINE_integer("sample_tokens", 200, "Tokens of the sample printed "
                                      "after training (0: none; none with several processes).")
_COORDINATOR = flags.DEFINE_string("coordinator_address", None, "host:port of process 0 of a "
                                   "multi-process run (with --num_processes, --process_id).")
_NUM_PROCESSES = flags.DEFINE_integer("num_processes", None, "Processes of a multi-process run.")
_PROCESS_ID = flags.DEFINE_integer("process_id", None, "This process's rank in [0, "
                                   "--num_processes) of a multi-process run.")


def main(argv):
  del argv
  distributed.initialize(_COORDINATOR.value, _NUM_PROCESSES.value, _PROCESS_ID.value)
  primary = jax.process_index() == 0
  config = common.loaded_config(_CONFIG)
  common.override_steps(config, _STEPS.value)
  if _DATA.value is not None:
    config.data.path = _DATA.value
  data = load_data(common.data_config_of(config))
  model_config, train_config, data_config = common.lm_configs(config, data)
  kind = model_kinds.kind_named(config.get("kind", "lm"))
  workdir = _WORKDIR.value or common.default_workdir(config.name)
  tokenizer = data.tokenizer.name if data.tokenizer else "none (ids)"
  if primary:
    print(f"config {config.name}: pattern {model_config.layer_kinds}, d_model "
          f"{model_config.d_model}, vocab {model_config.vocab_size:,}; data: "
          f"{data_config.path or 'embedded stdlib corpus'} ({data.train.size:,} train / "
          f"{data.val.size:,} val tokens, tokenizer {tokenizer}); workdir {workdir}")
  summary = kind.train(model_config, train_config, data.train, data.val, workdir,
                       extra_config={"name": config.name, "data": dataclasses.asdict(data_config)},
                       token_bytes=data.token_bytes)
  summary["peak_bytes_per_device"] = timing.peak_memory_bytes(jax.local_devices())
  stopped_by = summary.get("stopped_by")
  if not stopped_by:
    summary["unigram_bpb"] = None if data.token_bytes is None else unigram_bits_per_byte(
        data.train, data.val, model_config.vocab_size, token_bytes=data.token_bytes)
  if not primary:  # process 0 speaks for the run; the others end with their own summary
    print(records.dumps({"config": config.name, "workdir": workdir,
                         "process_id": jax.process_index(), **summary}))
    return cli.stop_status(stopped_by)
  if not stopped_by:
    records.write_summary(workdir, summary)
  if _SAMPLE_TOKENS.value > 0 and not stopped_by:
    if jax.process_count() > 1:
      print(f"no sample from a multi-process run: python -m experiments.generate "
            f"--workdir={workdir} samples from its checkpoint")
    else:
      model, params, _, _ = kind.load(workdir)
      if data.tokenizer is None:
        prompt, prompt_text = data.val[:SAMPLE_PROMPT_IDS].tolist(), None
      else:
        prompt, prompt_text = prompt_ids(data.tokenizer, SAMPLE_PROMPT), SAMPLE_PROMPT
      sample = kind.generate(model, params, jnp.asarray([prompt], jnp.int32),
                             steps=_SAMPLE_TOKENS.value, temperature=0.8, top_k=50, seed=0)
      print("sample:\n" + sample_text(data.tokenizer, prompt, sample[0].tolist(),
                                              prompt_text))
  print(f"checkpoints: {os.path.join(workdir, 'checkpoints')}; metrics: "
        f"{os.path.join(workdir, records.METRICS_FILE)}; summary: "
        f"{os.path.join(workdir, records.SUMMARY_FILE)}")
  if stopped_by:
    print(f"resume: python -m experiments.train --workdir={workdir} (same flags)")
  else:
    prompt_flag = ("--prompt='def '" if data.tokenizer else
                   "--prompt_ids=" + ",".join(map(str, data.val[:SAMPLE_PROMPT_IDS].tolist())))
    print(f"next: python -m experiments.evaluate --workdir={workdir}; "
          f"python -m experiments.generate --workdir={workdir} {prompt_flag}")
  print(records.dumps({"config": config.name, "workdir": workdir, **summary}))
  return cli.stop_status(stopped_by)


if __name__ == "__main__":
  cli.run(main)
