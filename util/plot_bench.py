#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Plot nc_bw results: one bar chart of GB/s per (mode, block length), cases side by side.

    util/plot_bench.py nc_bw.json [-o out.png]

Needs matplotlib (Debian: python3-matplotlib, installed by `util/install-deps.sh --plots`);
without it, prints the figures as text and says so.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="file written by nc_bw --json")
    ap.add_argument("-o", "--output", default="nc_bw.png", help="image to write (default nc_bw.png)")
    a = ap.parse_args()

    with open(a.json) as f:
        data = json.load(f)
    rows = [r for r in data["results"] if r.get("status") == "ok"]
    if not rows:
        print("plot_bench: no successful results in %s" % a.json)
        return 0
    groups = []
    for r in rows:
        g = (r["mode"], r["block"], r["stride"], r["bytes"])
        if g not in groups:
            groups.append(g)
    cases = []
    for r in rows:
        if r["case"] not in cases:
            cases.append(r["case"])

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_bench: matplotlib is not installed (util/install-deps.sh --plots installs "
              "python3-matplotlib); no plot written. Figures:")
        for g in groups:
            print("%s, %d B blocks, stride %d, %d B:" % g)
            for r in rows:
                if (r["mode"], r["block"], r["stride"], r["bytes"]) == g:
                    print("  %-16s %8.3f GB/s  (%s)" % (r["case"], r["gbps"], r["moved_by"]))
        return 0

    fig, axes = plt.subplots(1, len(groups), figsize=(4.5 * len(groups), 4.5), squeeze=False)
    for ax, g in zip(axes[0], groups):
        vals = {r["case"]: r for r in rows if (r["mode"], r["block"], r["stride"], r["bytes"]) == g}
        names = [c for c in cases if c in vals]
        colors = ["tab:gray" if n.startswith("cma") else "tab:orange" if not n.startswith("ddtx")
                  else "tab:blue" for n in names]
        bars = ax.bar(range(len(names)), [vals[n]["gbps"] for n in names], color=colors)
        for b, n in zip(bars, names):
            ax.annotate(vals[n]["moved_by"], (b.get_x() + b.get_width() / 2, b.get_height()),
                        ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("GB/s")
        ax.set_title("%s: %d B blocks, stride %d\n%.0f MiB per transfer" %
                     (g[0], g[1], g[2], g[3] / 2**20), fontsize=9)
    fig.suptitle("nc_bw on %s (%s CPUs)" % (data.get("host", "?"), data.get("cpus", "?")))
    fig.tight_layout()
    fig.savefig(a.output, dpi=120)
    print("plot_bench: wrote %s" % a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
