#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Which floor of prov/ddtx/src includes which, and whether any include goes up.

ddtx is built in floors; each may include only floors below it (and itself):

    core -> proto -> engine -> wire -> hmem -> common

The script reads every #include "floor/..." of prov/ddtx/src, prints the folder graph with the
number of includes on each arrow, and exits 1 when an include goes up a floor (which is also how
a circle between folders would show) or names an unknown folder.
    util/include-graph.py [--files]      --files: list every include of each arrow
"""
import os
import re
import sys

FLOORS = ["core", "proto", "engine", "wire", "hmem", "common"]  # top to bottom
RANK = {f: i for i, f in enumerate(FLOORS)}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "prov", "ddtx", "src")
    show_files = "--files" in sys.argv[1:]
    edges = {}
    bad = []
    for dirpath, _, names in os.walk(root):
        for name in sorted(names):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            src = rel.split(os.sep)[0]
            if src not in RANK:
                bad.append("%s: file outside the floors" % rel)
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for inc in INCLUDE.findall(text):
                dst = inc.split("/")[0] if "/" in inc else None
                if dst is None:
                    continue  # a header beside it, or generated: same floor
                if dst not in RANK:
                    bad.append("%s includes %s: unknown folder" % (rel, inc))
                    continue
                edges.setdefault((src, dst), []).append("%s -> %s" % (rel, inc))
                if RANK[dst] < RANK[src]:
                    bad.append("%s includes %s: %s is above %s" % (rel, inc, dst, src))
    print("floors, top to bottom: " + " -> ".join(FLOORS))
    for (src, dst), incs in sorted(edges.items(), key=lambda e: (RANK[e[0][0]], RANK[e[0][1]])):
        if src == dst:
            continue
        print("  %-6s -> %-6s %3d include%s" % (src, dst, len(incs), "" if len(incs) == 1 else "s"))
        if show_files:
            for i in incs:
                print("      " + i)
    if bad:
        for b in bad:
            print("UPWARD: " + b)
        print("include graph: %d upward include(s)" % len(bad))
        return 1
    print("include graph: no upward include, no circle between folders")
    return 0

if __name__ == "__main__":
    sys.exit(main())
