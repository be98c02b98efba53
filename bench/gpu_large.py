"""Large buffers on the GPU: gridlab's data path beside CuPy doing the same, in one run.

Usage (on a machine with a GPU and CuPy):

    python3 bench/gpu_large.py [--gridlab target/release/gridlab] [--baseline OLD_GRIDLAB] [--small | --busy | --fake]

For n = 2^26 floats (256 MiB), gridlab replays scripts of 0, 1, 5, 20 and 105 launches of `bump`
(`a[i] += 1`) after the same set-up (the kernel, `let a = ones(n)`), each ending by reading the
result (`expect a[0] == K + 1`, and the last element); for n = 2^10, scripts of 20, 2000 and 20000
launches (`--small`: only these). Each script runs REPEATS rounds, every script once per round
with every gridlab, one after another. What a row shows is a difference taken within each round
(the script of K launches less the one of 0: what the launches cost, uploading, running, bringing
the results back; 105 less 5, over 100: one more launch over 256 MiB, results read back every 64
launches as in any long run; 20000 less 2000, over 18000:
the per-launch overhead; `--busy`: 200 and 2000 launches of a kernel that keeps the GPU busy
about 45 us, 2000 less 200 over 1800, where what counts is the gap between one kernel and the
next), its median over the rounds, and the smallest and largest of them, so a
row the noise could have made is seen as such. The 20-launch script over 2^10 floats is shown
whole, start-up included: its launches take less than a process's start varies.

CuPy does the same in one process (compile and warm-up not counted): `cp.asarray` of the host
array (made once, like gridlab's `ones`), the launches, `.get()`, median of REPEATS; for small
launches both queueing its launches and waiting for each (gridlab must see each launch's answer
before the next one is sent: it reports every launch's kernel time and findings, and a fault
against the launch that made it). `--baseline` runs an older gridlab in the same rounds, for a
before/after. Prints Markdown tables, and a JSON line per gridlab figure on stderr.

`--fake` runs the small-launch scripts on the fake worker (`GRIDLAB_FAKE_GPU=1`, no GPU, no
CuPy; the scripts without their `expect`s, since the fake computes nothing): what the session
and the worker's loop cost per launch without the driver, on any machine.
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
# A kernel the GPU is busy with for a while (`--busy`): each thread steps `v = v / 2 + 1` BUSY_STEPS
# times, one dependent multiply-add after another, so a launch over 2^10 floats keeps the GPU
# about 45 us; the values settle at 2.
BUSY_KERNEL = """__global__ void busy(float *a, int n, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = a[i];
        for (int k = 0; k < m; k++) v = v * 0.5f + 1.0f;
        a[i] = v;
    }
}
"""
BUSY_STEPS = 20000
REPEATS = 5


def script(log2n, launches, busy=False, checked=True):
    n = 1 << log2n
    lines = [BUSY_KERNEL if busy else KERNEL, f"let n = {n}", "let a = ones(n)"]
    launch = f"busy<<<(n + 255) // 256, 256>>>(a, n, {BUSY_STEPS})" if busy else "bump<<<(n + 255) // 256, 256>>>(a, n)"
    lines += [launch] * launches
    value = (2 if launches else 1) if busy else launches + 1
    if checked:
        lines.append(f"expect a[0] == {value}")
        lines.append(f"expect a[n - 1] == {value}")
    return "\n".join(lines) + "\n"


def replay(gridlab, path, env=None):
    start = time.perf_counter()
    run = subprocess.run([gridlab, "replay", path, "--backend", "gpu"], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        sys.exit(f"{gridlab} replay {path} failed:\n{run.stdout}\n{run.stderr}")
    return seconds


def gridlab_rounds(gridlabs, log2n, counts, folder, busy=False, fake=False):
    """Wall times of the scripts with each number of launches in `counts`, for each gridlab:
    REPEATS rounds, each running every script once with every gridlab, one after another, so a
    difference between two scripts (or two builds) is taken within a round, where the machine's
    state is the same, and its median over the rounds is what a row shows."""
    paths = {}
    for k in counts:
        paths[k] = os.path.join(folder, f"{'busy' if busy else 'bump'}-{log2n}-{k}.gridlab")
        with open(paths[k], "w") as f:
            f.write(script(log2n, k, busy, checked=not fake))
    env = dict(os.environ, GRIDLAB_FAKE_GPU="1") if fake else None
    for g in gridlabs:
        replay(g, paths[max(counts)], env)  # warm the compile cache
    rounds = {g: {k: [] for k in counts} for g in gridlabs}
    for _ in range(REPEATS):
        for k in counts:
            for g in gridlabs:
                rounds[g][k].append(replay(g, paths[k], env))
    return rounds


def paired(times, more, fewer):
    """Median over the rounds of (the script of `more` launches less that of `fewer`), and the
    smallest and largest of those differences, which say how much the median can be trusted."""
    diffs = [a - b for a, b in zip(times[more], times[fewer])]
    return statistics.median(diffs), min(diffs), max(diffs)


def cupy_case(log2n, launches, wait_each=False, busy=False):
    """CuPy's upload, launches and download; `wait_each` waits for every launch to finish, as
    gridlab does (it times each launch and must see its fault before the next)."""
    import cupy as cp
    import numpy as np

    n = 1 << log2n
    k = cp.RawKernel("extern \"C\" " + (BUSY_KERNEL if busy else KERNEL), "busy" if busy else "bump")
    host = np.ones(n, np.float32)
    grid = ((n + 255) // 256,)
    args = (np.int32(n), np.int32(BUSY_STEPS)) if busy else (np.int32(n),)
    value = (2 if launches else 1) if busy else launches + 1

    def once():
        start = time.perf_counter()
        d = cp.asarray(host)
        for _ in range(launches):
            k(grid, (256,), (d, *args))
            if wait_each:
                cp.cuda.runtime.deviceSynchronize()
        out = d.get()
        seconds = time.perf_counter() - start
        assert out[0] == value and out[-1] == value
        return seconds

    once()  # compile and warm up
    return statistics.median(once() for _ in range(REPEATS))


def per_launch_cells(rounds, gridlabs, names, counts, key):
    """One table cell per gridlab: the time of one more launch (the difference between the scripts
    of `counts` launches, within each round, over their difference) and its range; each also as a
    JSON line on stderr under `key`, in microseconds."""
    more_launches, fewer = counts
    more = more_launches - fewer
    cells = []
    for g in gridlabs:
        med, lo, hi = paired(rounds[g], more_launches, fewer)
        cells.append(f"{each(med / more)} {spread(lo, hi, more)}")
        print(json.dumps({"gridlab": names[g], key: med / more * 1e6, "min": lo / more * 1e6, "max": hi / more * 1e6}), file=sys.stderr)
    return cells


def each(seconds):
    """A time per launch, in the unit that shows it: `2.5 ms`, `46 us`."""
    return f"{seconds * 1e3:.1f} ms" if abs(seconds) >= 1e-3 else f"{seconds * 1e6:.0f} us"


def spread(lo, hi, per=1):
    """`(0.098-0.104)`: the smallest and largest of a median's differences."""
    return f"({each(lo / per)}-{each(hi / per)})" if per != 1 else f"({lo:.3f}-{hi:.3f} s)"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gridlab", default="target/release/gridlab")
    p.add_argument("--baseline")
    p.add_argument(
        "--small",
        action="store_true",
        help="only launches over 2^10 floats, up to 20000 of them (the per-launch overhead)",
    )
    p.add_argument(
        "--busy",
        action="store_true",
        help="only launches of a kernel that keeps the GPU busy about 45 us, 200 and 2000 of them",
    )
    p.add_argument(
        "--fake",
        action="store_true",
        help="the small-launch scripts on the fake worker (GRIDLAB_FAKE_GPU=1): no GPU, no CuPy",
    )
    p.add_argument("--rounds", type=int, default=5, help="rounds of every script (default 5)")
    args = p.parse_args()
    global REPEATS
    REPEATS = args.rounds
    gridlabs = [args.gridlab] + ([args.baseline] if args.baseline else [])
    names = {args.gridlab: "gridlab", args.baseline: "before"}
    if args.fake:
        with tempfile.TemporaryDirectory() as folder:
            small = gridlab_rounds(gridlabs, 10, [2000, 20000], folder, fake=True)
        print(f"The fake worker (GRIDLAB_FAKE_GPU=1); {REPEATS} rounds; medians of differences within a round.\n")
        print("| case | " + " | ".join(names[g] for g in gridlabs) + " |")
        print("| --- | " + " | ".join("---:" for _ in gridlabs) + " |")
        cells = per_launch_cells(small, gridlabs, names, (20000, 2000), "fake_per_launch_us")
        print("| one more launch over 2^10 floats, fake worker (20000 less 2000, over 18000) | " + " | ".join(cells) + " |")
        return
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
    print(f"GPU: {gpu.stdout.strip() or 'unknown'}; {REPEATS} rounds; each difference is the median of the")
    print("differences within a round, with the smallest and largest in brackets.\n")
    with tempfile.TemporaryDirectory() as folder:
        if args.busy:
            busy = gridlab_rounds(gridlabs, 10, [200, 2000], folder, busy=True)
            more = 1800
            wait = (cupy_case(10, 2000, wait_each=True, busy=True) - cupy_case(10, 200, wait_each=True, busy=True)) / more
            queued = (cupy_case(10, 2000, busy=True) - cupy_case(10, 200, busy=True)) / more
            print("| case | " + " | ".join(names[g] for g in gridlabs) + " | CuPy, waiting for each launch | CuPy, queued |")
            print("| --- | " + " | ".join("---:" for _ in gridlabs) + " | ---: | ---: |")
            cells = per_launch_cells(busy, gridlabs, names, (2000, 200), "busy_per_launch_us")
            print(
                f"| one more launch of `busy` ({BUSY_STEPS} steps) over 2^10 floats (2000 less 200, over 1800) | "
                + " | ".join(cells)
                + f" | {each(wait)} | {each(queued)} |"
            )
            return
        if not args.small:
            big = gridlab_rounds(gridlabs, 26, [0, 1, 5, 20, 105], folder)
            print("| case | " + " | ".join(names[g] for g in gridlabs) + " | CuPy | gridlab / CuPy |")
            print("| --- | " + " | ".join("---:" for _ in gridlabs) + " | ---: | ---: |")
            for k in (1, 5, 20):
                cupy = cupy_case(26, k)
                cells = []
                for g in gridlabs:
                    med, lo, hi = paired(big[g], k, 0)
                    cells.append(f"{med:.3f} s {spread(lo, hi)}")
                    print(json.dumps({"gridlab": names[g], "n": "2^26", "launches": k, "s": med, "min": lo, "max": hi, "cupy_s": cupy}), file=sys.stderr)
                ratio = paired(big[args.gridlab], k, 0)[0] / cupy
                what = f"{k} launch{'es' if k > 1 else ''} over 2^26 floats, result read"
                print(f"| {what} | " + " | ".join(cells) + f" | {cupy:.3f} s | {ratio:.1f}x |")
            cupy_more = (cupy_case(26, 105) - cupy_case(26, 5)) / 100
            cells = []
            for g in gridlabs:
                med, lo, hi = paired(big[g], 105, 5)
                cells.append(f"{each(med / 100)} {spread(lo, hi, 100)}")
            print("| one more launch over 2^26 floats (105 less 5, over 100) | " + " | ".join(cells) + f" | {each(cupy_more)} | |")
            print()
        small = gridlab_rounds(gridlabs, 10, [20, 2000, 20000], folder)
        print("| case | " + " | ".join(names[g] for g in gridlabs) + " | CuPy, waiting for each launch | CuPy, queued |")
        print("| --- | " + " | ".join("---:" for _ in gridlabs) + " | ---: | ---: |")
        cells = [f"{statistics.median(small[g][20]):.3f} s" for g in gridlabs]
        print("| 20 launches over 2^10 floats, whole script with start-up | " + " | ".join(cells) + " | | |")
        more = 18000
        cupy_wait = (cupy_case(10, 20000, wait_each=True) - cupy_case(10, 2000, wait_each=True)) / more
        cupy_queued = (cupy_case(10, 20000) - cupy_case(10, 2000)) / more
        cells = per_launch_cells(small, gridlabs, names, (20000, 2000), "per_launch_us")
        print(
            "| one more launch over 2^10 floats (20000 less 2000, over 18000) | "
            + " | ".join(cells)
            + f" | {each(cupy_wait)} | {each(cupy_queued)} |"
        )


if __name__ == "__main__":
    main()
