"""Large buffers on the GPU: gridlab's data path beside CuPy doing the same, in one run.

Usage (on a machine with a GPU and CuPy):

    python3 bench/gpu_large.py [--gridlab target/release/gridlab] [--baseline OLD_GRIDLAB] [--small]

For n = 2^26 floats (256 MiB) and n = 2^10, gridlab replays scripts with 0, 1, 5, 20, 200 and
2000 launches (with `--small`, only 200, 2000 and 20000 over 2^10 floats) of `bump` (`a[i] += 1`)
after the same set-up (the kernel, `let a = ones(n)`), each ending by reading the result (`expect
a[0] == K + 1`, and the last element). A script's wall time less the set-up's is what its launches
cost: uploading, running, bringing the results back. CuPy does the same in one process (compile
and warm-up not counted): `cp.asarray` of the host array (made once, like gridlab's `ones`), the
launches, `.get()`. The 5- and 20-launch rows give the cost of one more launch once the first has
been made, and the two longest runs over 2^10 floats the per-launch overhead, beside CuPy both
queueing its launches and waiting for each (gridlab waits for each: it times every launch and
must see a fault before the next). `--baseline` runs an older gridlab on the same cases, for a
before/after in the same run. Prints one JSON line per measurement, then a Markdown table.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

KERNEL = """__global__ void bump(float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += 1.0f;
}
"""
REPEATS = 5


def script(log2n, launches):
    n = 1 << log2n
    lines = [KERNEL, f"let n = {n}", "let a = ones(n)"]
    lines += ["bump<<<(n + 255) // 256, 256>>>(a, n)"] * launches
    lines.append(f"expect a[0] == {launches + 1}")
    lines.append(f"expect a[n - 1] == {launches + 1}")
    return "\n".join(lines) + "\n"


def replay(gridlab, path):
    start = time.perf_counter()
    run = subprocess.run([gridlab, "replay", path, "--backend", "gpu"], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        sys.exit(f"{gridlab} replay {path} failed:\n{run.stdout}\n{run.stderr}")
    return seconds


def gridlab_case(gridlab, log2n, launches, folder):
    """Median wall time of the script with `launches` launches, less the set-up's."""
    paths = {}
    for k in (0, launches):
        paths[k] = os.path.join(folder, f"bump-{log2n}-{k}.gridlab")
        with open(paths[k], "w") as f:
            f.write(script(log2n, k))
    replay(gridlab, paths[launches])  # warm the compile cache
    base = statistics.median(replay(gridlab, paths[0]) for _ in range(REPEATS))
    total = statistics.median(replay(gridlab, paths[launches]) for _ in range(REPEATS))
    return total - base, total


def cupy_case(log2n, launches, wait_each=False):
    """CuPy's upload, launches and download; `wait_each` waits for every launch to finish, as
    gridlab does (it times each launch and must see its fault before the next)."""
    import cupy as cp
    import numpy as np

    n = 1 << log2n
    k = cp.RawKernel("extern \"C\" " + KERNEL, "bump")
    host = np.ones(n, np.float32)
    grid = ((n + 255) // 256,)

    def once():
        start = time.perf_counter()
        d = cp.asarray(host)
        for _ in range(launches):
            k(grid, (256,), (d, np.int32(n)))
            if wait_each:
                cp.cuda.runtime.deviceSynchronize()
        out = d.get()
        seconds = time.perf_counter() - start
        assert out[0] == launches + 1 and out[-1] == launches + 1
        return seconds

    once()  # compile and warm up
    return statistics.median(once() for _ in range(REPEATS))


def each(seconds):
    """A time per launch, in the unit that shows it: `2.5 ms`, `46 us`."""
    return f"{seconds * 1e3:.1f} ms" if abs(seconds) >= 1e-3 else f"{seconds * 1e6:.0f} us"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gridlab", default="target/release/gridlab")
    p.add_argument("--baseline")
    p.add_argument(
        "--small",
        action="store_true",
        help="only launches over 2^10 floats, up to 20000 of them (the per-launch overhead, less noisy)",
    )
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        cases = [(26, 1), (26, 5), (26, 20), (10, 20), (10, 200), (10, 2000)]
        if args.small:
            cases = [(10, 200), (10, 2000), (10, 20000)]
        for log2n, launches in cases:
            row = {"n": f"2^{log2n}", "launches": launches}
            row["gridlab_s"], row["gridlab_total_s"] = gridlab_case(args.gridlab, log2n, launches, folder)
            row["cupy_s"] = cupy_case(log2n, launches)
            row["cupy_wait_s"] = cupy_case(log2n, launches, wait_each=True)
            if args.baseline:
                row["baseline_s"], row["baseline_total_s"] = gridlab_case(args.baseline, log2n, launches, folder)
            print(json.dumps(row), flush=True)
            rows.append(row)
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
    print(f"\nGPU: {gpu.stdout.strip() or 'unknown'}\n")
    print(
        "| case | gridlab | per launch | CuPy | gridlab / CuPy | CuPy, waiting for each launch | per launch "
        "| gridlab before | script, start-up included |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    by = {(r["n"], r["launches"]): r for r in rows}
    five, twenty = by.get(("2^26", 5)), by.get(("2^26", 20))
    for r in rows:
        before = f'{r["baseline_s"]:.3f} s' if "baseline_s" in r else "-"
        print(
            f'| {r["launches"]} launch{"es" if r["launches"] > 1 else ""} over {r["n"]} floats '
            f'| {r["gridlab_s"]:.3f} s | {each(r["gridlab_s"] / r["launches"])} | {r["cupy_s"]:.4f} s '
            f'| {r["gridlab_s"] / r["cupy_s"]:.1f}x | {r["cupy_wait_s"]:.4f} s '
            f'| {each(r["cupy_wait_s"] / r["launches"])} | {before} | {r["gridlab_total_s"]:.2f} s |'
        )
    if five and twenty:
        more = (twenty["gridlab_s"] - five["gridlab_s"]) / 15
        cupy_more = (twenty["cupy_s"] - five["cupy_s"]) / 15
        print(f"\nOne more launch over 2^26 floats: gridlab {more * 1e3:.1f} ms, CuPy {cupy_more * 1e3:.2f} ms.")
    # The two longest runs of small launches: their difference is launches alone, start-up and
    # set-up cancelled out.
    small = sorted((r for r in rows if r["n"] == "2^10"), key=lambda r: r["launches"])
    few, many = (small[-2], small[-1]) if len(small) >= 2 else (None, None)
    if few and many:
        more = many["launches"] - few["launches"]

        def per_launch(key):
            return (many[key] - few[key]) / more * 1e6

        before = f", before {per_launch('baseline_s'):.0f} us" if "baseline_s" in many else ""
        print(
            f"One more launch over 2^10 floats ({few['launches']} to {many['launches']} launches): gridlab "
            f"{per_launch('gridlab_s'):.0f} us{before}; CuPy {per_launch('cupy_wait_s'):.0f} us waiting for it, "
            f"{per_launch('cupy_s'):.0f} us queued."
        )


if __name__ == "__main__":
    main()
