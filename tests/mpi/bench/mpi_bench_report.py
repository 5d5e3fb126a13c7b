#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Table (and optional plot) of mpi_nc_bench results from several MPI stacks.

    mpi_bench_report.py RESULTS.txt [--stacks a,b,...] [--plot FILE.png] [--json FILE]
                        [--subject mpich-ddtx] [--shm mpich-shm] [--small-block 128]
                        [--stat min|median] [--beat STACK] [--where TEXT]

RESULTS.txt holds the "RESULT stack=... case=... lat_us=... min_us=..." lines of mpi_nc_bench
(possibly several runs per stack).  --stat min (default) uses the fastest batch of all runs, the
estimate least disturbed by other load on a shared host; --stat median uses the median of the
runs' median batches.  Prints one row per case: latency in microseconds per stack, the subject's
speed-up over the libfabric shm provider, its ratio to the best stack that is not ddtx (stacks
named *ddtx* are the subject's variants: other MPICH builds over ddtx), the stack that wins and,
when several ddtx stacks ran, the best of them against the best other; then the targets:
  - vec-4096x32 (4 KiB x 32 blocks): subject >= 1.5x lower latency than the shm provider and
    lower than every other stack;
  - small-block layouts (average block <= --small-block bytes): subject at most 5% slower than
    the best stack.
With --beat STACK (the runs across two hosts, issue 11) the targets are instead: the subject
faster than STACK on every case; the "vs" column is then the subject's speed-up over STACK.
--where says where the ranks ran (the plot's title).
Lines "# run R STACK: core_bounce: ... line N ns ..." (util/mpi-bench.sh writes one before each
run) are summed up after the table: the host's regime when each run started (a line bounced
between the cores in more than SLOW_LINE_NS is the slow regime, in which every two-process
figure is 2.5-5x higher; tests/fabtests/benchmarks/core_bounce.c).
Exit status 1 when a data check failed (timings never fail it).
"""
import json
import re
import statistics
import sys
from collections import OrderedDict, defaultdict


SLOW_LINE_NS = 100   # fast regime 27-35 ns, slow 160-182 (2026-11-27)


def parse(path, stat):
    res = defaultdict(lambda: defaultdict(list))
    info = OrderedDict()
    bad = []
    regimes = OrderedDict()  # stack -> one-way line ns at the start of each run
    with open(path, errors='replace') as f:
        for line in f:
            m = re.match(r'# run \d+ (\S+): core_bounce: .* line (\d+) ns', line)
            if m:
                regimes.setdefault(m.group(1), []).append(int(m.group(2)))
                continue
            if not line.startswith('RESULT '):
                continue
            kv = dict(re.findall(r'(\w+)=(\S+)', line))
            st, case = kv['stack'], kv['case']
            res[case][st].append(float(kv['min_us' if stat == 'min' else 'lat_us']))
            info.setdefault(case, kv)
            if kv.get('check') != 'ok':
                bad.append((st, case))
    return res, info, bad, regimes


def main(argv):
    path = None
    stacks = None
    plot = None
    jout = None
    subject, shm, small = 'mpich-ddtx', 'mpich-shm', 128.0
    stat = 'min'
    beat = None
    where = '2 ranks on one host'
    it = iter(argv)
    for a in it:
        if a == '--stacks':
            stacks = next(it).split(',')
        elif a == '--plot':
            plot = next(it)
        elif a == '--json':
            jout = next(it)
        elif a == '--subject':
            subject = next(it)
        elif a == '--shm':
            shm = next(it)
        elif a == '--stat':
            stat = next(it)
        elif a == '--beat':
            beat = shm = next(it)
        elif a == '--where':
            where = next(it)
        elif a == '--small-block':
            small = float(next(it))
        elif path is None:
            path = a
        else:
            print(__doc__)
            return 2
    if not path:
        print(__doc__)
        return 2
    res, info, bad, regimes = parse(path, stat)
    if stacks is None:
        stacks = []
        for c in res.values():
            for s in c:
                if s not in stacks:
                    stacks.append(s)
    agg = min if stat == 'min' else statistics.median
    med = {c: {s: agg(v) for s, v in d.items()} for c, d in res.items()}

    ddtx_stacks = [s for s in stacks if 'ddtx' in s]
    several = len(ddtx_stacks) > 1
    vs = 'vs shm' if shm == 'mpich-shm' else 'vs ' + shm
    hdr = ['case', 'blocks', 'bytes', 'avg B'] + stacks + [vs, 'vs best other', 'winner']
    if several:
        hdr.append('best ddtx / best other')
    rows = []
    targets = []
    wins_sub = wins_any = ncases = 0
    beat_any = beat_cases = 0   # --beat: the best ddtx stack against STACK
    for c, kv in info.items():
        m = med[c]
        row = [c, kv['blocks'], kv['bytes'], '%.0f' % float(kv['avg_block'])]
        for s in stacks:
            row.append('%.1f' % m[s] if s in m else '-')
        sub = m.get(subject)
        others = {s: v for s, v in m.items() if 'ddtx' not in s}
        if sub and shm in m:
            row.append('%.2fx' % (m[shm] / sub))
        else:
            row.append('-')
        if sub and others:
            best_s = min(others, key=others.get)
            row.append('%.2f (%s)' % (sub / others[best_s], best_s))
        else:
            row.append('-')
        row.append(min(m, key=m.get) if m else '-')
        dd = {s: v for s, v in m.items() if s in ddtx_stacks}
        if several:
            if dd and others:
                bd, bo = min(dd, key=dd.get), min(others, key=others.get)
                row.append('%.2f (%s)' % (dd[bd] / others[bo], bd))
            else:
                row.append('-')
        if beat and dd and beat in m:
            beat_cases += 1
            beat_any += min(dd.values()) < m[beat]
        if dd and others:
            ncases += 1
            wins_any += min(dd.values()) < min(others.values())
            wins_sub += sub is not None and sub < min(others.values())
        rows.append(row)
        if sub is None:
            continue
        if beat:
            if beat in m:
                targets.append(('%s: %s faster than %s' % (c, subject, beat), sub < m[beat],
                                '%.1f us vs %.1f us (%.2fx)' % (sub, m[beat], m[beat] / sub)))
        elif c == 'vec-4096x32':
            ok1 = shm in m and m[shm] / sub >= 1.5
            ok2 = all(sub < v for v in others.values())
            targets.append(('4 KiB x 32: %s >= 1.5x lower latency than %s' % (subject, shm), ok1,
                            '%.2fx' % (m[shm] / sub) if shm in m else 'no %s result' % shm))
            best_s = min(others, key=others.get) if others else '-'
            targets.append(('4 KiB x 32: %s faster than every other stack' % subject, ok2,
                            '%.1f us vs best other %.1f us (%s)' % (sub, others.get(best_s, float('nan')), best_s)))
        elif float(kv['avg_block']) <= small:
            allm = dict(m)
            best_s = min(allm, key=allm.get)
            ok = sub <= 1.05 * allm[best_s]
            targets.append(('small blocks %s: %s within 5%% of the best' % (c, subject), ok,
                            '%.2f x best (%s %.1f us)' % (sub / allm[best_s], best_s, allm[best_s])))

    widths = [max(len(str(r[i])) for r in rows + [hdr]) for i in range(len(hdr))]
    print('Latency (us, %s; ping-pong half round trip, fft2d one MPI_Alltoall)' % (
        'fastest batch of all runs' if stat == 'min' else 'median batch, median of runs'))
    print('  '.join(str(h).rjust(w) if i else str(h).ljust(w) for i, (h, w) in enumerate(zip(hdr, widths))))
    for r in rows:
        print('  '.join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(r, widths))))
    print()
    if regimes:
        slow = sum(1 for v in regimes.values() for ns in v if ns > SLOW_LINE_NS)
        runs = sum(len(v) for v in regimes.values())
        print('Host regime at the start of each run (core_bounce, ns one-way per cache line; over '
              '%d: the slow regime): %d of %d runs slow' % (SLOW_LINE_NS, slow, runs))
        for st, v in regimes.items():
            print('  %s: %s' % (st, ' '.join('%d%s' % (ns, '*' if ns > SLOW_LINE_NS else '')
                                              for ns in v)))
        print()
    if ncases:
        print('%s faster than every stack without ddtx on %d of %d cases' % (subject, wins_sub, ncases))
        if several:
            print('the best ddtx stack (%s) faster than every stack without ddtx on %d of %d cases'
                  % (', '.join(ddtx_stacks), wins_any, ncases))
    if beat and several and beat_cases:
        print('the best ddtx stack faster than %s on %d of %d cases' % (beat, beat_any, beat_cases))
        print()
    if targets:
        print('Targets:')
        for name, ok, detail in targets:
            print('  %s %s: %s' % ('MET ' if ok else 'MISS', name, detail))
        print('  %d of %d targets met' % (sum(1 for t in targets if t[1]), len(targets)))
    if bad:
        print('DATA CHECK FAILED: ' + ', '.join('%s/%s' % b for b in bad))
    if jout:
        with open(jout, 'w') as f:
            json.dump({'stacks': stacks, 'cases': list(info), 'median_us': med,
                       'info': info, 'targets': [list(t) for t in targets]}, f, indent=1)
    if plot:
        try:
            import matplotlib
            matplotlib.use('Agg')
            import matplotlib.pyplot as plt
        except ImportError:
            print('no matplotlib: plot skipped (util/mpi-bench.sh --plot installs python3-matplotlib)')
        else:
            cases = list(info)
            fig, ax = plt.subplots(figsize=(max(10, 0.55 * len(cases)), 6))
            w = 0.8 / max(1, len(stacks))
            for i, s in enumerate(stacks):
                ys = [med[c].get(s, float('nan')) for c in cases]
                ax.bar([x + i * w for x in range(len(cases))], ys, w, label=s)
            ax.set_yscale('log')
            ax.set_ylabel('latency (us, log scale)')
            ax.set_xticks([x + 0.4 - w / 2 for x in range(len(cases))])
            ax.set_xticklabels(cases, rotation=60, ha='right', fontsize=8)
            ax.legend(fontsize=8)
            ax.set_title('MPI noncontiguous ping-pong latency (%s), %s' % (stat, where))
            fig.tight_layout()
            fig.savefig(plot, dpi=120)
            print('plot: %s' % plot)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
