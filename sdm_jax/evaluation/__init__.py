"""Measuring models and ops: `timing` (device time and memory of jitted calls, per-op
breakdowns from a profiler trace), `gdn_benchmarks`, `sdm_benchmarks` and
`topk_benchmarks` (what `experiments.bench_ops` times), `decode_benchmarks` (what
`experiments.bench_decode` times), `recall_sweep` and `recall_plots` (recall accuracy against
state size, behind `experiments.recall_sweep`)."""
