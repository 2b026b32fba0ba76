#!/usr/bin/env python3
"""summary.py CSV OUTDIR WINDOW NOTE: bench/shm/run.sh's tables.

Medians over rounds of every (test, processes, size, configuration) into
OUTDIR/medians.csv (also what plot.gp draws), and OUTDIR/summary.txt: the
issue's figures (#22) side by side with the ratio to ob1-vader and the
target, headed by NOTE (time, rounds, load average).
"""
import csv
import statistics
import sys

CFGS = ['mrail-shm', 'mrail-tcp', 'ob1-vader']
csv_in, out, window, note = sys.argv[1:5]
rows = list(csv.DictReader(open(csv_in)))
if not rows:
    sys.exit('summary.py: no rows in %s (every run failed? see err.log)'
             % csv_in)


def key(r):
    return (r['test'], int(r['np']), int(r['bytes']))


keys = sorted({key(r) for r in rows})
keyset = set(keys)
med, nrounds = {}, {}
for k in keys:
    for c in CFGS:
        v = [float(r['usec']) for r in rows if key(r) == k and r['label'] == c]
        med[k, c] = statistics.median(v) if v else float('nan')
        nrounds[k, c] = len(v)


def mbps(k, c):
    test, _, n = k
    us = med[k, c]
    if test == 'pingpong':
        return n / us
    if test == 'stream':
        return n * int(window) / us
    return float('nan')


def ratio(a, b):
    return a / b if b == b and b > 0 else float('nan')


with open(out + '/medians.csv', 'w') as f:
    f.write('test,np,bytes,' + ','.join(c + '_usec' for c in CFGS) + ',' +
            ','.join(c + '_MBps' for c in CFGS) +
            ',shm/vader_time,tcp/vader_time\n')
    for k in keys:
        t = [med[k, c] for c in CFGS]
        b = [mbps(k, c) for c in CFGS]
        f.write('%s,%d,%d,%s,%s,%.3f,%.3f\n' % (
            k + (','.join('%.2f' % x for x in t),
                 ','.join('%.1f' % x for x in b),
                 ratio(t[0], t[2]), ratio(t[1], t[2]))))

lines = ['bench/shm/run.sh: ' + note,
         'medians over rounds (rounds with a figure: %d..%d per cell)' % (
             min(nrounds.values()), max(nrounds.values())), '']


def size(n):
    return '%d MiB' % (n >> 20) if n >= 1 << 20 else \
        '%d KiB' % (n >> 10) if n >= 1 << 10 else '%d B' % n


def table(title, test, np_, col, sizes, target):
    if not any((test, np_, n) in keyset for n in sizes):
        return  # not run (run.sh --tests)
    lines.append(title)
    hdr = '  %-8s %12s %12s %12s %10s  %s' % (
        'size', 'mrail-shm', 'mrail-tcp', 'ob1-vader', 'shm/vader', target)
    lines.append(hdr)
    for n in sizes:
        k = (test, np_, n)
        if k not in keyset:
            continue
        if col == 'usec':
            v = [med[k, c] for c in CFGS]
            r = ratio(v[0], v[2])
            fmt = '%12.2f'
        else:
            v = [mbps(k, c) for c in CFGS]
            r = ratio(v[0], v[2])
            fmt = '%12.0f'
        lines.append('  %-8s %s %s %s %10.2f' % (
            size(n), fmt % v[0], fmt % v[1], fmt % v[2], r))
    lines.append('')


all_sizes = sorted({k[2] for k in keys})
big = [n for n in all_sizes if n >= 65536]
table('ping-pong one-way latency, 2 processes (us)', 'pingpong', 2, 'usec',
      all_sizes, '8 B target: shm/vader <= 1.5')
table('ping-pong bandwidth, 2 processes (MB/s)', 'pingpong', 2, 'MBps',
      big, 'target: shm/vader >= 0.95 from 64 KiB')
table('streaming bandwidth, window %s + ack, 2 processes (MB/s)' % window,
      'stream', 2, 'MBps', all_sizes,
      'target: shm/vader >= 0.95 from 64 KiB')
for coll in ('allreduce', 'alltoall'):
    table('%s, 4 processes (us per call)' % coll, coll, 4, 'usec',
          [n for n in all_sizes if n in (8, 1 << 20)],
          'target: shm/vader <= 1.2')
open(out + '/summary.txt', 'w').write('\n'.join(lines))
