"""Maglev: a sliding-window decoder with recurrent K/V memory injection (DESIGN.md section 6).

Modules:
- `config`: `MaglevConfig` (an LMConfig for the decoder P plus Q's pattern, sharing, loss).
- `injection`: `MemoryInjection`, the per-layer k_rec/v_rec and gates (an attention kv_hook).
- `model`: `Prefiller` (Q), `Decoder` (P), `Maglev` (pure functions over both parameter
  trees), `shift_memories`.
- `training`: `maglev_loss_fn` (the lifted two-pass loss), `train_maglev`, `load_maglev`.
- `inference`: `recurrent_memories` (reference), `fixed_point_memories` (parallel prompt
  processing), `RecurrentDecoder`, `generate`.
- `evaluation`: `maglev_evaluator` (teacher-forced, recurrent and memory-zeroed BPB).
- `describe`: parameters under both sharing modes, inference state, FLOPs per token.
- `model_kinds`: the kinds of model ("lm", "maglev") and what to call to train, load,
  evaluate, describe and sample each; here because it names both.
- `equal_tokens`: training runs of either kind for equal tokens and tabulating them.
- `baseline_comparison`: Maglev against its baselines at equal tokens, and the timing of
  fixed-point against recurrent prompt processing (`time_prefill`).
"""
