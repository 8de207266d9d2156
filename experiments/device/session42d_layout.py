"""Session 42, call d: a copy of the tree under devrun/NAME with the top-k's exact-order
fallback (`_exact_frontier`) branched to another way, for layout: `swap` puts it in the
cond's first branch (the condition negated), `loop` runs it as the body of a loop of 0 or 1
trips. Usage: python3 experiments/device/session42d_layout.py swap|loop"""
import re
import shutil
import sys

name = sys.argv[1]
shutil.rmtree(f"devrun/{name}", ignore_errors=True)
for part in ("pallas_kernels", "sdm_jax", "maglev_jax", "experiments"):
  shutil.copytree(part, f"devrun/{name}/{part}")
shutil.copy("pyproject.toml", f"devrun/{name}/")
path = f"devrun/{name}/pallas_kernels/product_key/topk_pallas.py"
with open(path) as f:
  s = f.read()
pattern = (r"lax\.cond\(_exact_order_missed\((.*?)\),\n(\s+)(functools\.partial\(_exact_frontier"
           r".*?\)), lambda: None\)")
if name == "swap":
  new = lambda m: (f"lax.cond(~_exact_order_missed({m.group(1)}),\n{m.group(2)}lambda: None, "
                   f"{m.group(3)})")
else:
  new = lambda m: (f"lax.fori_loop(0, _exact_order_missed({m.group(1)}).astype(jnp.int32),\n"
                   f"{m.group(2)}lambda i, c: ({m.group(3)}(), c)[1], 0)")
s, n = re.subn(pattern, new, s, flags=re.S)
assert n == 1, n
with open(path, "w") as f:
  f.write(s)
print("copy", path, "edited")
