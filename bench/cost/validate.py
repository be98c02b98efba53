"""The cost model's validation table: bench/cost/validate's results (sim.txt, gpu.txt, ncu.csv
in one folder) joined per launch, with the summary figures issue 26 asks for, on the half of
the kernels the model was fitted on and on the held-out half.

A kernel's half is fixed by its name (its CRC-32's parity), so the split does not depend on the
model or the measurements, and both sizes of a kernel fall in the same half: the held-out figures
are for kernels the model has never been fitted to."""

import csv
import math
import re
import statistics
import sys
import zlib
from pathlib import Path


def records(path):
    """`name = cost of K<<<...>>>` blocks of a replay's output: name -> fields."""
    out, name = {}, None
    if not path.exists():
        return out
    for line in path.read_text(errors="replace").splitlines():
        m = re.match(r"^(\w+) = cost of (\S+?)<<<(.*?)>>>", line)
        if m:
            name = m.group(1)
            out[name] = {"kernel": m.group(2), "launch": m.group(3)}
            continue
        m = re.match(r"^\s+(\w+)\.(\w+)\s+(-?[\d.,]+)$", line)
        if m and m.group(1) in out:
            out[m.group(1)][m.group(2)] = float(m.group(3).replace(",", ""))
            continue
        m = re.match(r"^([\w-]+-bound)", line)
        if m and name in out and "limit" not in out[name]:
            out[name]["limit"] = m.group(1)
    return out


def launches_in_order(set_dir):
    """(record name, kernel) for every `let NAME = cost K<<<` in the set, in replay order."""
    order = []
    for f in sorted(Path(set_dir).glob("*.gridlab")):
        for line in f.read_text().splitlines():
            m = re.match(r"^let (\w+) = cost (\w+)<<<", line)
            if m:
                order.append((m.group(1), m.group(2)))
    return order


def ncu_rows(path, order):
    """ncu's raw CSV rows matched to the set's launches: the n-th launch of kernel K in the set
    is the n-th row for K (other kernels, if any, are skipped)."""
    if not path.exists():
        return {}
    text = path.read_text(errors="replace")
    start = text.find('"ID"')
    if start < 0:
        return {}
    rows = list(csv.DictReader(text[start:].splitlines()))
    rows = [r for r in rows if r.get("ID", "").isdigit()]  # drop the units row
    by_kernel = {}
    for r in rows:
        by_kernel.setdefault(r.get("Kernel Name", ""), []).append(r)
    seen, out = {}, {}
    for name, kernel in order:
        k = seen.get(kernel, 0)
        seen[kernel] = k + 1
        rs = by_kernel.get(kernel, [])
        if k < len(rs):
            out[name] = rs[k]
    return out


def num(row, key):
    v = row.get(key, "").replace(",", "")
    try:
        return float(v)
    except ValueError:
        return None


def group(name):
    """`stride33_b` -> `stride33`: both sizes of one kernel configuration."""
    return re.sub(r"_[ab]$", "", name)


def half(name):
    return "held-out" if zlib.crc32(group(name).encode()) % 2 else "fit"


def err(ratio):
    return max(ratio, 1 / ratio)


def summary(cases, label):
    rs = [c["ratio"] for c in cases]
    if not rs:
        return f"{label}: no kernels measured"
    errs = sorted(err(r) for r in rs)
    within = lambda x: sum(e <= x for e in errs) / len(errs)
    geo = math.exp(sum(math.log(r) for r in rs) / len(rs))
    pairs = right = 0
    for i, a in enumerate(cases):
        for b in cases[i + 1 :]:
            hi, lo = max(a["gpu"], b["gpu"]), min(a["gpu"], b["gpu"])
            if hi >= 1.2 * lo:
                pairs += 1
                right += (a["gpu"] < b["gpu"]) == (a["model"] < b["model"])
    order = f"{right / pairs:.0%} of {pairs} pairs" if pairs else "no pairs"
    return (
        f"{label}: {len(rs)} launches, median error {statistics.median(errs):.2f}x, "
        f"{within(1.15):.0%} within 1.15x, {within(1.5):.0%} within 1.5x, {within(2.0):.0%} within 2x, "
        f"worst {errs[-1]:.2f}x, geometric mean of model/GPU {geo:.2f}; "
        f"ordered right where the GPU separates by 20% or more: {order}"
    )


def counts_table(sim, ncu):
    """Model counts against ncu's, where the definitions match."""
    lines = []
    checks = {
        "sectors/request": (
            lambda s: s.get("sectors_per_request"),
            lambda r: ratio_of(
                sum_of(r, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
                sum_of(r, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
            ),
        ),
        "bank conflicts": (
            lambda s: s.get("bank_conflicts"),
            lambda r: sum_of(r, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
        ),
        "SIMT efficiency": (
            lambda s: s.get("simt_efficiency"),
            lambda r: scaled(num(r, "smsp__thread_inst_executed_per_inst_executed.ratio"), 1 / 32),
        ),
        "theoretical occupancy": (
            lambda s: s.get("occupancy"),
            lambda r: scaled(num(r, "sm__maximum_warps_per_active_cycle_pct"), 1 / 100),
        ),
        "DRAM bytes": (
            lambda s: s.get("dram_bytes"),
            lambda r: sum_of(r, "dram__bytes_read.sum", "dram__bytes_write.sum"),
        ),
        "warp instructions (model: warp steps)": (
            lambda s: s.get("warp_steps"),
            lambda r: num(r, "smsp__inst_executed.sum"),
        ),
    }
    lines.append("| count | launches compared | equal within 5% | median model / ncu |")
    lines.append("| --- | ---: | ---: | ---: |")
    for label, (model, measured) in checks.items():
        rs = []
        for name, r in ncu.items():
            m, g = model(sim.get(name, {})), measured(r)
            if m is None or g is None:
                continue
            if m == 0 and g < 0.5:
                rs.append(1.0)
            elif m > 0 and g > 0:
                rs.append(m / g)
            else:
                rs.append(float("inf") if m > 0 else 0.0)
        if rs:
            close = sum(0.95 <= x <= 1.05 for x in rs) / len(rs)
            lines.append(f"| {label} | {len(rs)} | {close:.0%} | {statistics.median(rs):.2f} |")
    return lines


def scaled(v, factor):
    return v * factor if v else None


def sum_of(r, *keys):
    vals = [num(r, k) for k in keys]
    return sum(v for v in vals if v is not None) if any(v is not None for v in vals) else None


def ratio_of(a, b):
    return a / b if a is not None and b else None


def main():
    out = Path(sys.argv[1])
    set_dir = Path(__file__).parent / "set"
    sim, gpu = records(out / "sim.txt"), records(out / "gpu.txt")
    ncu = ncu_rows(out / "ncu.csv", launches_in_order(set_dir))
    # The GPU backend's records name the profile it picked for the GPU present.
    gpu_text = (out / "gpu.txt").read_text(errors="replace") if (out / "gpu.txt").exists() else ""
    m = re.search(r"time measured on this GPU; the rest from the simulator's model of (.+?)\)", gpu_text)
    gpu_name = m.group(1) if m else ""
    cases = []
    print("| launch | kernel | half | model (us) | limited by (model) | GPU (us) | model / GPU |")
    print("| --- | --- | --- | ---: | --- | ---: | ---: |")
    for name, s in sim.items():
        g = gpu.get(name, {}).get("time_us")
        cells = [name, f"`{s['kernel']}<<<{s['launch']}>>>`", half(name), f"{s.get('time_us', float('nan')):.1f}", s.get("limit", "")]
        if g and s.get("time_us"):
            r = s["time_us"] / g
            cases.append({"name": name, "half": half(name), "model": s["time_us"], "gpu": g, "ratio": r})
            cells += [f"{g:.1f}", f"{r:.2f}"]
        else:
            cells += ["-", "-"]
        print("| " + " | ".join(cells) + " |")
    missing = [n for n in sim if n not in gpu]
    print()
    if gpu_name:
        print(f"GPU: {gpu_name}")
    print(f"{len(sim)} launches estimated, {len(cases)} measured" + (f"; not measured: {', '.join(missing)}" if missing and gpu else ""))
    for label in ("held-out", "fit"):
        print("- " + summary([c for c in cases if c["half"] == label], label))
    print("- " + summary(cases, "all"))
    csim, cgpu = records(out / "calibrate-sim.txt"), records(out / "calibrate-gpu.txt")
    if csim and cgpu:
        print()
        print("Calibration microbenchmarks (bench/cost/calibrate: the model's constants were read off these):")
        print()
        print("| launch | model (us) | GPU (us) | model / GPU |")
        print("| --- | ---: | ---: | ---: |")
        for name, s in csim.items():
            g = cgpu.get(name, {}).get("time_us")
            if g and s.get("time_us"):
                print(f"| {name} | {s['time_us']:.1f} | {g:.1f} | {s['time_us'] / g:.2f} |")
    if ncu:
        print()
        print(f"Counts against Nsight Compute ({len(ncu)} launches profiled):")
        print()
        for line in counts_table(sim, ncu):
            print(line)


if __name__ == "__main__":
    main()
