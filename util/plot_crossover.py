#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Plot the DDT engine benchmarks: the crossover heat maps (nc_crossover), and optionally auto
against the fixed schemes on the mixes (nc_mix) and the layout-cache hit/miss cost
(nc_layout_cost).

    util/plot_crossover.py crossover.json [-o crossover.png]
                           [--mix mix.json [--mix-output mix.png]]
                           [--layout-cost layout_cost.json [--layout-cost-output lc.png]]

crossover.png has two panels over block length x layout reuse: which fixed scheme wins and by
how much (colour: the winner, shade and label: its margin over the second best), and auto's time
relative to the best fixed scheme (target <= 1.05).

Needs matplotlib (Debian: python3-matplotlib, installed by `util/bench-engine.sh --plot`);
without it, prints the figures as text and says so.
"""
import argparse
import json
import math
import sys

COLOURS = {"pack": "#d95f02", "sgl": "#1b9e77", "umr": "#7570b3"}


def fmt_bytes(v):
    if v >= 1 << 20 and v % (1 << 20) == 0:
        return "%dM" % (v >> 20)
    if v >= 1024 and v % 1024 == 0:
        return "%dK" % (v >> 10)
    return str(v)


def crossover_cells(data):
    """{(block, reuse): {scheme: time_us}} of the successful cells."""
    cells = {}
    for c in data["cells"]:
        if c.get("status") != "ok":
            continue
        cells.setdefault((c["block"], c["reuse"]), {})[c["scheme"]] = c["time_us"]
    return cells


def summarise(times):
    fixed = {s: t for s, t in times.items() if s != "auto"}
    if not fixed:
        return None, None, None
    order = sorted(fixed, key=fixed.get)
    best = order[0]
    margin = fixed[order[1]] / fixed[best] if len(order) > 1 else None
    ratio = times["auto"] / fixed[best] if "auto" in times else None
    return best, margin, ratio


def print_text(data, cells):
    blocks, reuses = data["blocks"], data["reuse"]
    print("winner (margin) / auto:best")
    print("%8s " % "block" + " ".join("%18s" % ("reuse %d" % r) for r in reuses))
    for b in blocks:
        row = []
        for r in reuses:
            best, margin, ratio = summarise(cells.get((b, r), {}))
            if best is None:
                row.append("%18s" % "-")
                continue
            txt = "%s %.2fx" % (best, margin or 0)
            if ratio is not None:
                txt += " / %.2f" % ratio
            row.append("%18s" % txt)
        print("%8s " % fmt_bytes(b) + " ".join(row))


def plot_crossover(plt, data, cells, out):
    from matplotlib.colors import to_rgb
    blocks, reuses = data["blocks"], data["reuse"]
    nb, nr = len(blocks), len(reuses)
    fig, axes = plt.subplots(1, 2, figsize=(5 + 2.2 * nr, 1.2 + 0.75 * nb))
    # Panel 1: winner, shaded by margin (log scale, 1x light .. >=4x full colour).
    ax = axes[0]
    img = [[(0.92, 0.92, 0.92)] * nr for _ in range(nb)]
    for i, b in enumerate(blocks):
        for j, r in enumerate(reuses):
            best, margin, _ = summarise(cells.get((b, r), {}))
            if best is None:
                ax.text(j, i, "-", ha="center", va="center")
                continue
            m = margin or 1.0
            strength = min(1.0, math.log(max(m, 1.0)) / math.log(4.0))
            base = to_rgb(COLOURS.get(best, "#666666"))
            w = 0.25 + 0.75 * strength
            img[i][j] = tuple(1 - w * (1 - c) for c in base)
            ax.text(j, i, "%s\n%.2fx" % (best, m), ha="center", va="center", fontsize=9,
                    color="white" if w > 0.7 else "black")
    ax.imshow(img, aspect="auto", origin="lower")
    ax.set_title("fastest fixed scheme, margin over the 2nd")
    # Panel 2: auto / best.
    ax = axes[1]
    vals = [[float("nan")] * nr for _ in range(nb)]
    for i, b in enumerate(blocks):
        for j, r in enumerate(reuses):
            _, _, ratio = summarise(cells.get((b, r), {}))
            if ratio is not None:
                vals[i][j] = ratio
                ax.text(j, i, "%.2f" % ratio, ha="center", va="center", fontsize=9,
                        fontweight="bold" if ratio > 1.05 else "normal")
    im = ax.imshow(vals, aspect="auto", origin="lower", cmap="RdYlGn_r", vmin=0.8, vmax=1.4)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    ax.set_title("auto / best fixed (target <= 1.05)")
    for ax in axes:
        ax.set_xticks(range(nr))
        ax.set_xticklabels([str(r) for r in reuses])
        ax.set_yticks(range(nb))
        ax.set_yticklabels([fmt_bytes(b) for b in blocks])
        ax.set_xlabel("layout reuse (sends per buffer)")
        ax.set_ylabel("block length")
    fig.suptitle("ddtx crossover map: %s per transfer, stride %gx block, %d CPUs"
                 % (fmt_bytes(data["size"]), data.get("stride_factor", 2), data.get("cpus", 0)))
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("wrote %s" % out)


def plot_mix(plt, path, out):
    with open(path) as f:
        data = json.load(f)
    rows = [r for r in data["results"] if r.get("status") == 0 and r["part"] == "MIX"]
    mixes = []
    for r in rows:
        if r["mix"] not in mixes:
            mixes.append(r["mix"])
    if not mixes:
        print("plot_crossover: no mix results in %s" % path)
        return
    schemes = ["pack", "sgl", "umr", "auto"]
    fig, axes = plt.subplots(1, len(mixes), figsize=(3.6 * len(mixes), 3.4), squeeze=False)
    for ax, m in zip(axes[0], mixes):
        t = {r["scheme"]: r["time_us"] for r in rows if r["mix"] == m}
        xs = [s for s in schemes if s in t]
        ax.bar(range(len(xs)), [t[s] for s in xs],
               color=[COLOURS.get(s, "#333333") for s in xs])
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels(xs)
        ax.set_yscale("log")
        ax.set_title(m)
        ax.set_ylabel("us per iteration (log)")
        for i, s in enumerate(xs):
            ax.text(i, t[s], "%.0f" % t[s], ha="center", va="bottom", fontsize=8)
    fig.suptitle("auto vs fixed schemes on mixed layouts (nc_mix)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("wrote %s" % out)


def plot_layout_cost(plt, path, out):
    with open(path) as f:
        data = json.load(f)
    rows = [r for r in data["rows"] if r.get("status") == "ok"]
    if not rows:
        print("plot_crossover: no layout-cost rows in %s" % path)
        return
    n = [r["blocks"] for r in rows]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.plot(n, [r["hit_ns"] / r["blocks"] for r in rows], "o-", label="hit (same layout)")
    ax.plot(n, [r["miss_ns"] / r["blocks"] for r in rows], "s-", label="miss (fresh layout)")
    ax.axhline(10, color="grey", linestyle=":", label="10 ns/block target")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("blocks per message")
    ax.set_ylabel("fi_tsendmsg post time per block (ns)")
    fit = data.get("fit", {})
    ax.set_title("layout cache: hit %.2f, miss %.2f ns/block (slopes)"
                 % (fit.get("hit_ns_per_block", 0), fit.get("miss_ns_per_block", 0)))
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("wrote %s" % out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="file written by nc_crossover --json")
    ap.add_argument("-o", "--output", default="crossover.png")
    ap.add_argument("--mix", help="file written by nc_mix --json")
    ap.add_argument("--mix-output", default="mix.png")
    ap.add_argument("--layout-cost", help="file written by nc_layout_cost --json")
    ap.add_argument("--layout-cost-output", default="layout_cost.png")
    a = ap.parse_args()

    with open(a.json) as f:
        data = json.load(f)
    cells = crossover_cells(data)
    print_text(data, cells)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_crossover: matplotlib is not installed (Debian: python3-matplotlib); "
              "figures printed as text only", file=sys.stderr)
        return 0
    plot_crossover(plt, data, cells, a.output)
    if a.mix:
        plot_mix(plt, a.mix, a.mix_output)
    if a.layout_cost:
        plot_layout_cost(plt, a.layout_cost, a.layout_cost_output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
