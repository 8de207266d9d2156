"""Copies of the tree (devrun/topk_<name>) with the top-k groups kernel cut, to attribute its
time at S = 512, k = 32 (the default of sessions 36-39: half_select="groups",
final_select="tournament"; the tournament is no longer the default since session 40).
  clamp: ids clamped into range after the halves' rounds and after the final rounds (the
         control: the cut copies carry the same clamps);
  th:    clamp + the halves' rounds cut to one (the picks of later ranks are unwritten
         lanes, clamped into the half);
  tf:    clamp + the final tournament's rounds cut to one (the unwritten id lanes clamped).
  fcomb: (exact) the final tournament's candidates carry slot << lane bits | lane, so the
         round's min over tied group bests also names the winner's lane (and group): one
         reduction per round fewer.
  gbloop: (exact) the halves' group bests by a loop over the 16 places of a group, one
         [R, G] load each, instead of one [R, G, g] tile (fewer live registers).
Session 33's cut copies read unwritten lanes as ids and faulted; the clamps keep every
address in range. Usage (repo root): python experiments/device/ablate_topk.py clamp th tf"""
import pathlib
import shutil
import sys

PATH = "pallas_kernels/product_key/topk_pallas.py"
CLAMP = [
    ("  width = 2 * sub_keys\n  keys, slots = [], []\n",
     "  first_idx = tuple(jnp.clip(x, 0, sub_keys - 1) for x in first_idx)\n"
     "  second_idx = tuple(jnp.clip(x, 0, sub_keys - 1) for x in second_idx)\n"
     "  width = 2 * sub_keys\n  keys, slots = [], []\n"),
    ("  idx = pltriton.load(idx_ref.at[rows.load, jnp.minimum(out_lanes, k - 1)])\n",
     "  idx = pltriton.load(idx_ref.at[rows.load, jnp.minimum(out_lanes, k - 1)])\n"
     "  idx = jnp.clip(idx, 0, sub_keys * sub_keys - 1)\n"),
]
GBLOOP = [(
    """  def group_bests(offset):
    tile = _keys(scores_ref, rows._replace(load=rows.load[:, :, None]), offset,
                 group_lanes[:, :, None] * size + in_group, sub_keys)  # [R, G, g]
    best = jnp.max(tile, axis=2)                                       # [R, G]
    best_col = jnp.min(jnp.where(tile == best[:, :, None], in_group, _NO_ID), axis=2)
    return best, group_lanes * size + best_col  # ties of a group: its first entry
""",
    """  def group_bests(offset):
    def step(j, carry):
      best, best_col = carry
      cols = group_lanes * size + j
      keys = _keys(scores_ref, rows, offset, cols, sub_keys)  # [R, G]
      better = keys > best  # strict: the first of equal keys stays
      return jnp.where(better, keys, best), jnp.where(better, cols, best_col)
    init = (jnp.full((rows.load.shape[0], groups), _TAKEN, jnp.int32),
            jnp.broadcast_to(group_lanes * size, (rows.load.shape[0], groups)))
    return lax.fori_loop(0, size, step, init)
""")]
FCOMB = [
    ("""    pltriton.store(candidates_ref.at[rows.store, 1, lanes], part_slots, mask=mask)""",
     """    lane_bits = max(1, (total - 1).bit_length())
    pltriton.store(candidates_ref.at[rows.store, 1, lanes],
                   jnp.where(part_slots == _NO_ID, _NO_ID,
                             jnp.left_shift(part_slots, lane_bits) | lanes), mask=mask)"""),
    ("""    pltriton.store(idx_ref.at[rows.store, jnp.full(rows.store.shape, r, jnp.int32)], pick,
                   mask=live)
    group = jnp.min(jnp.where(best_slot == pick, group_lanes, groups), axis=1,
                    keepdims=True)                                   # slots are distinct""",
     """    lane_bits = max(1, (total - 1).bit_length())
    pltriton.store(idx_ref.at[rows.store, jnp.full(rows.store.shape, r, jnp.int32)],
                   jnp.right_shift(pick, lane_bits), mask=live)
    group = (pick & ((1 << lane_bits) - 1)) // size"""),
]
EDITS = {
    "fcomb": FCOMB,
    "both": FCOMB + GBLOOP,
    "gbloop": GBLOOP,
    "clamp": CLAMP,
    "th": CLAMP + [("  lax.fori_loop(0, rounds, round_, tuple(group_bests(offset)",
                    "  lax.fori_loop(0, 1, round_, tuple(group_bests(offset)")],
    "tf": CLAMP + [("  lax.fori_loop(0, k, round_, (best, best_slot))",
                    "  lax.fori_loop(0, 1, round_, (best, best_slot))")],
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
