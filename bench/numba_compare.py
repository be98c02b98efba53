"""Same results as Numba on the same GPU: run each program of `tests/python` with real Numba
and with `gridlab replay --backend gpu`, and say whether every line the Numba run printed is
printed by gridlab's run too, in order.

    python3 bench/numba_compare.py PATH/TO/gridlab [NUMBA_SITE]

NUMBA_SITE goes first on PYTHONPATH for the Numba runs (the GPU machine needs a NumPy that
its Numba accepts: ../shared/anchors/README.md). Racy programs print different numbers from
run to run, under Numba as under gridlab.
"""
import os, subprocess, sys, glob

G = sys.argv[1]
site = sys.argv[2] if len(sys.argv) > 2 else ""
env = dict(os.environ, PYTHONPATH=site) if site else dict(os.environ)
same = differ = 0
for prog in sorted(glob.glob("tests/python/*.py")):
    nb = subprocess.run([sys.executable, prog], capture_output=True, text=True, env=env, timeout=120)
    gl = subprocess.run([G, "replay", prog, "--backend", "gpu"], capture_output=True, text=True, timeout=120)
    want = [l.rstrip() for l in nb.stdout.splitlines() if l.strip()]
    have = [l.rstrip() for l in gl.stdout.splitlines()]
    at, missing = 0, []
    for w in want:
        try:
            at = have.index(w, at) + 1
        except ValueError:
            missing.append(w)
    status = "same" if not missing and nb.returncode == 0 else "DIFFER"
    if status == "same":
        same += 1
    else:
        differ += 1
    print(f"{status:6} {prog}: numba rc={nb.returncode} printed {len(want)} lines; gridlab rc={gl.returncode}; missing {len(missing)}")
    for m in missing[:4]:
        print("         numba printed:", m)
    if nb.returncode != 0:
        print("         numba stderr:", nb.stderr.strip().splitlines()[-1:] )
print(f"{same} programs print the same under Numba and gridlab, {differ} differ")
