"""Copies of the tree (devrun/topk_<name>) with a stage of the top-k kernel's default form
cut, to see where its time goes at S = 512, k = 32 (groups halves with lazy tails, the
exact frontier: `topk_pallas.default_config`):
  clamp: the control: the candidates' picks clamped into the half and the final ids into
         the S^2 slots (the cut copies carry the same clamps, so every address stays in
         range where a cut leaves lanes of the pick log or of the ids unwritten);
  h1:    clamp + the halves' rounds cut to one (of k // 2 = 16): the later ranks' picks
         are stand-ins, stored without rounds, distinct from each other and from the first
         (the first pick's index + r, mod S; a lazy tail's head can still equal one, a
         tie in 2 of 8 random normal rows in interpret mode, so h1 runs the tie branch a
         little more than main). (Call 67a left those lanes unwritten, clamped:
         many candidates were then one pair, so their keys tied in most rounds and the
         frontier's tie branch ran: 0.706 ms against main's 0.354, an artifact.)
  f1:    clamp + the frontier's rounds cut to one (of k = 32): the later ids are unwritten
         lanes, clamped;
  h1f1:  both: what is left is the halves' start, the candidates' formation and stores,
         and the logits.
A cut loop of one trip is straight-line code, so the copies also differ in what the
compiler can schedule across; read their gaps as estimates. (Session 33-34's cuts of the
tournament form of that time are in git at ef7061e.)
Its edits match the kernel up to 5adb527 (the frontier that formed and stored its
candidates, which session 68 replaced); run it in a tree of that commit
(`git worktree add /tmp/t67 5adb527`).
Usage (repo root): python experiments/device/ablate_topk.py clamp h1 f1 h1f1"""
import pathlib
import shutil
import sys

PATH = "pallas_kernels/product_key/topk_pallas.py"
CLAMP = [
    ("    first, second = picks_of_part(part)\n",
     "    first, second = (jnp.clip(x, 0, sub_keys - 1) for x in picks_of_part(part))\n"),
    ("  idx = pltriton.load(idx_ref.at[rows.load, jnp.minimum(out_lanes, k - 1)])\n",
     "  idx = pltriton.load(idx_ref.at[rows.load, jnp.minimum(out_lanes, k - 1)])\n"
     "  idx = jnp.clip(idx, 0, sub_keys * sub_keys - 1)\n"),
]
HALVES_ONE_ROUND = [
    ("  states = lax.fori_loop(0, rounds, round_, tuple(half.start() for half in halves))",
     "  starts = tuple(half.start() for half in halves)\n"
     "  states = lax.fori_loop(0, 1, round_, starts)\n"
     "  for r in range(1, rounds):  # distinct stand-in picks: no ties the rounds would not make\n"
     "    for log, start in zip(logs, starts):\n"
     "      _log_pick(log, rows, r, (start.pick_col + r) % sub_keys)"),
]
FRONTIER_ONE_ROUND = [
    ("  lax.fori_loop(0, k, round_, (head_key, head_id, head_next, *_start_tails(tails)))",
     "  lax.fori_loop(0, 1, round_, (head_key, head_id, head_next, *_start_tails(tails)))"),
]
EDITS = {
    "clamp": CLAMP,
    "h1": CLAMP + HALVES_ONE_ROUND,
    "f1": CLAMP + FRONTIER_ONE_ROUND,
    "h1f1": CLAMP + HALVES_ONE_ROUND + FRONTIER_ONE_ROUND,
}


def main(names):
  for name in names:
    dest = pathlib.Path("devrun") / f"topk_{name}"
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for part in ("pallas_kernels", "sdm_jax", "maglev_jax", "experiments"):
      shutil.copytree(part, dest / part)
    text = (dest / PATH).read_text()
    for old, new in EDITS[name]:
      assert text.count(old) == 1, (name, old)
      text = text.replace(old, new)
    (dest / PATH).write_text(text)
    print("made", dest)


if __name__ == "__main__":
  main(sys.argv[1:])
