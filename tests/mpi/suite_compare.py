#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Compare MPICH test-suite runs (TAP files written by test/mpi's runtests -tapfile=...).

    suite_compare.py NAME=FILE.tap NAME=FILE.tap [...] [--reference NAME] [--subject NAME]
                     [--markdown] [--retry NAME=RETRY.tap ...] [--write-retry SUITE_DIR MAXNP]

Prints, per test directory, how many tests each run passed, failed and skipped; then every test
whose outcome differs between the runs (with the first lines of its output), then the tests that
failed in every run.  Tests are keyed by directory, program, process count and occurrence (the
test lists run some programs several times with other arguments or environment), so runs of the
same test list line up.

--write-retry writes SUITE_DIR/<dir>/testlist.retry with the test-list lines of every test whose
outcome differs (so that they can be run again, alone, with each provider) and prints
"retry dirs: d1,d2".  --retry NAME=RETRY.tap merges such a rerun into run NAME: a test's rerun
outcome replaces its first one, and the report says which differences went away.

Exit status: 1 when a test passes with the reference run (default: the last) but not with the
subject run (default: the first), else 0.
"""
import re
import sys
from collections import OrderedDict, defaultdict

LINE = re.compile(r'^(not ok|ok)\s+-?\s*(\S+)\s*(\d*)(.*)$')  # no np: the test did not build


def parse(path):
    tests = OrderedDict()
    seen = defaultdict(int)
    cur = None
    with open(path, errors='replace') as f:
        for raw in f:
            line = raw.rstrip('\n')
            m = LINE.match(line)
            if m:
                status, prog, np, rest = m.groups()
                base = (prog.lstrip('./'), int(np) if np else 0)
                seen[base] += 1
                key = base + (seen[base],)
                if 'SKIP' in rest:
                    st = 'skip'
                elif status == 'ok':
                    st = 'pass'
                else:
                    st = 'FAIL'
                t = re.search(r'time=([0-9.]+)', rest)
                cur = {'status': st, 'time': float(t.group(1)) if t else 0.0, 'out': []}
                tests[key] = cur
                continue
            if cur is not None and line.startswith('## ') and not line.startswith('## Test output'):
                if len(cur['out']) < 3:
                    cur['out'].append(line[3:].strip())
    return tests


def retry_lists(suite, maxnp, keys):
    """Write <dir>/testlist.retry holding the list lines of the given (prog, np, occurrence) keys."""
    import os
    bydir = defaultdict(set)
    for k in keys:
        d, prog = k[0].split('/', 1)
        bydir[d].add(k)
    dirs = []
    for d, ks in bydir.items():
        lines = []
        seen = defaultdict(int)
        with open(os.path.join(suite, d, 'testlist')) as f:
            for raw in f:
                line = raw.split('#', 1)[0].strip()
                if not line or line.startswith('!'):
                    continue
                parts = line.split()
                prog = parts[0]
                np = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 1
                np = min(np, maxnp) if maxnp > 0 else np
                base = ('%s/%s' % (d, prog), np)
                seen[base] += 1
                if base + (seen[base],) in ks:
                    lines.append(line)
        with open(os.path.join(suite, d, 'testlist.retry'), 'w') as f:
            f.write('\n'.join(lines) + '\n')
        dirs.append(d)
    return dirs


def why(entry):
    out = ' | '.join(entry['out'])
    if 'TIMED OUT' in out or 'TIMEOUT' in out:
        return 'timeout'
    return out[:160] if out else ''


def main(argv):
    runs = OrderedDict()
    ref = subj = None
    md = False
    retries = {}
    write_retry = None
    args = iter(argv)
    for a in args:
        if a == '--reference':
            ref = next(args)
        elif a == '--subject':
            subj = next(args)
        elif a == '--markdown':
            md = True
        elif a == '--retry':
            name, path = next(args).split('=', 1)
            retries[name] = parse(path)
        elif a == '--write-retry':
            write_retry = (next(args), int(next(args)))
        elif '=' in a:
            name, path = a.split('=', 1)
            runs[name] = parse(path)
        else:
            print(__doc__)
            return 2
    if len(runs) < 2:
        print(__doc__)
        return 2
    names = list(runs)
    first_diff = None
    if retries:
        def differs(k):
            return len({runs[n].get(k, {'status': 'missing'})['status'] for n in names}) > 1
        first_diff = [k for r in runs.values() for k in r if differs(k)]
        first_diff = list(OrderedDict.fromkeys(first_diff))
        for n, rt in retries.items():
            # a rerun list has occurrence numbers of its own: map them back by order
            order = defaultdict(list)
            for k in first_diff:
                order[k[:2]].append(k)
            cnt = defaultdict(int)
            for k, e in rt.items():
                base = k[:2]
                i = cnt[base]
                cnt[base] += 1
                if i < len(order[base]):
                    e = dict(e)
                    e['retried'] = True
                    runs[n][order[base][i]] = e
    subj = subj or names[0]
    ref = ref or names[-1]
    keys = []
    for r in runs.values():
        for k in r:
            if k not in keys:
                keys.append(k)

    # per-directory summary
    dirs = OrderedDict()
    for k in keys:
        d = k[0].split('/')[0]
        dirs.setdefault(d, []).append(k)
    hdr = ['directory', 'tests'] + ['%s pass/fail/skip' % n for n in names]
    rows = []
    tot = {n: [0, 0, 0] for n in names}
    for d, ks in dirs.items():
        row = [d, str(len(ks))]
        for n in names:
            c = [0, 0, 0]
            for k in ks:
                st = runs[n].get(k, {'status': 'missing'})['status']
                if st == 'pass':
                    c[0] += 1
                elif st == 'skip':
                    c[2] += 1
                else:
                    c[1] += 1
            for i in range(3):
                tot[n][i] += c[i]
            row.append('%d/%d/%d' % tuple(c))
        rows.append(row)
    rows.append(['total', str(len(keys))] + ['%d/%d/%d' % tuple(tot[n]) for n in names])
    widths = [max(len(r[i]) for r in rows + [hdr]) for i in range(len(hdr))]
    def out(r):
        if md:
            print('| ' + ' | '.join(r) + ' |')
        else:
            print('  '.join(c.ljust(w) for c, w in zip(r, widths)))
    print('MPICH test suite: %s' % ', '.join(names))
    out(hdr)
    if md:
        print('|' + '---|' * len(hdr))
    for r in rows:
        out(r)

    def label(k):
        return '%s %d%s' % (k[0], k[1], '' if k[2] == 1 else ' (#%d)' % k[2])

    diff = [k for k in keys if len({runs[n].get(k, {'status': 'missing'})['status'] for n in names}) > 1]
    if first_diff is not None:
        gone = [k for k in first_diff if k not in diff]
        print()
        print('Differences in the first runs: %d; rerun alone with each provider, %d went away:' % (
            len(first_diff), len(gone)))
        for k in gone:
            print('  %-40s now %s' % (label(k), '; '.join(
                '%s: %s' % (n, runs[n].get(k, {'status': 'missing'})['status']) for n in names)))
    if write_retry:
        dirs = retry_lists(write_retry[0], write_retry[1], diff)
        print('retry dirs: %s' % ','.join(dirs))
    print()
    print('Tests whose outcome differs (%d):' % len(diff))
    for k in diff:
        parts = []
        for n in names:
            e = runs[n].get(k)
            if e is None:
                parts.append('%s: missing' % n)
            else:
                w = why(e) if e['status'] == 'FAIL' else ''
                parts.append('%s: %s%s' % (n, e['status'], ' (%s)' % w if w else ''))
        print('  %-40s %s' % (label(k), '; '.join(parts)))
    both = [k for k in keys if all(runs[n].get(k, {'status': 'x'})['status'] == 'FAIL' for n in names)]
    print()
    print('Tests failing in every run (%d):' % len(both))
    for k in both:
        print('  %-40s %s' % (label(k), '; '.join('%s: %s' % (n, why(runs[n][k]) or 'failed') for n in names)))
    regress = [k for k in keys
               if runs[ref].get(k, {}).get('status') == 'pass' and runs[subj].get(k, {}).get('status') != 'pass']
    print()
    print('%s passes %d tests, %s passes %d; %d pass with %s but not with %s' % (
        subj, tot[subj][0], ref, tot[ref][0], len(regress), ref, subj))
    return 1 if regress else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
