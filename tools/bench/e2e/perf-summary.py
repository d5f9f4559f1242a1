#!/usr/bin/env python3
"""Summarises a whole-stack `perf record -a -g` of the end-to-end bench (profile.sh).

    python3 tools/bench/e2e/perf-summary.py <out-dir>

Reads <out-dir>/ps.txt (pid → service, from the command lines) and <out-dir>/perf.data, and
prints, per service: its share of all samples, its threads, where the sampled instruction was
(DuckDB, librdkafka, V8's garbage collector, other V8/Node native code, JS, libc, kernel), the
hottest leaf symbols and the JS functions on the most stacks (inclusive). JS frames of optimised
code can be misattributed by one caller when V8 inlines; read inclusive JS shares as a guide.
"""
import collections
import re
import subprocess
import sys

SERVICES = ('ingest', 'validate', 'query-api', 'merge-compaction')
GC_FRAME = re.compile(r'v8::internal::(Heap|Scavenger|MarkCompact|ConcurrentMarking|MinorMarkSweep|Sweeper|ArrayBufferSweeper)')


def service_names(out_dir):
    names = {}
    for line in open(f'{out_dir}/ps.txt'):
        pid, args = line.split(None, 1)
        for service in SERVICES:
            if f'/bin/{service}/main.js' in args:
                names[pid] = service
        if 'java' in args and out_dir.rstrip('/').split('/')[-1] in args:
            names[pid] = 'broker'
        if 'tools/bench/e2e/run.ts' in args and ('--import' in args or '--require' in args):  # not tsx's launcher
            names[pid] = 'load driver'
    return names


def samples(out_dir):
    text = subprocess.run(['perf', 'script', '-i', f'{out_dir}/perf.data', '-F', 'pid,tid,comm,ip,sym,dso'],
                          capture_output=True, text=True, check=True).stdout
    for block in text.split('\n\n'):
        lines = [l for l in block.split('\n') if l.strip()]
        if not lines:
            continue
        head = re.match(r'\s*(.+?)\s+(\d+)/(\d+)', lines[0])
        if head is None:
            continue
        frames = []
        for l in lines[1:]:
            m = re.match(r'\s*[0-9a-f]+\s+(.*)\s+\((.*)\)\s*$', l)
            if m:
                frames.append((m.group(1), m.group(2)))
        yield head.group(1), head.group(2), frames


def category(frames):
    if not frames:
        return 'unknown'
    sym, dso = frames[0]
    if 'perf-' in dso:
        return 'JS'
    if any(GC_FRAME.search(f[0]) for f in frames):
        return 'V8 GC'
    if 'kernel' in dso or dso.startswith('[k'):
        return 'kernel'
    if 'rdkafka' in dso or 'confluent' in dso:
        return 'librdkafka'
    if 'duckdb' in dso:
        return 'DuckDB'
    if 'libc.so' in dso:
        return 'libc (malloc, locks, copies)'
    if dso.endswith('/node'):
        return 'V8 builtins' if sym.startswith('Builtins_') else 'V8/Node native'
    if 'libjvm' in dso:
        return 'JVM'
    return dso.split('/')[-1]


def main(out_dir):
    names = service_names(out_dir)
    total = 0
    per_service = collections.Counter()
    threads = collections.Counter()
    categories = collections.Counter()
    leaves = collections.Counter()
    inclusive = collections.Counter()
    for comm, pid, frames in samples(out_dir):
        total += 1
        service = names.get(pid, 'idle' if pid == '0' else 'other')
        per_service[service] += 1
        threads[(service, re.sub(r'\d+', '#', comm))] += 1
        categories[(service, category(frames))] += 1
        if frames:
            leaves[(service, frames[0][0][:100])] += 1
        for sym in {f[0][:120] for f in frames if f[0].startswith('JS:')}:
            inclusive[(service, sym)] += 1
    if total == 0:
        sys.exit(f'no samples in {out_dir}/perf.data')
    print(f'{total} samples')
    for service, n in per_service.most_common():
        print(f'  {service:18s} {100 * n / total:5.1f} %')
    for service, n in per_service.most_common():
        if service in ('idle', 'other'):
            continue
        share = lambda c: f'{100 * c / n:.0f} %'
        print(f'\n== {service}: {100 * n / total:.1f} % of all samples')
        print('  threads:', ', '.join(f'{t} {share(c)}' for (s, t), c in threads.most_common() if s == service and c / n > 0.02))
        print('  where:', ', '.join(f'{k} {share(c)}' for (s, k), c in categories.most_common() if s == service and c / n > 0.02))
        print('  hottest leaf symbols:')
        for (s, sym), c in [x for x in leaves.most_common() if x[0][0] == service][:10]:
            print(f'    {100 * c / n:5.1f} %  {sym}')
        top_js = [x for x in inclusive.most_common() if x[0][0] == service][:12]
        if top_js:
            print('  JS functions on the most stacks:')
            for (s, sym), c in top_js:
                print(f'    {100 * c / n:5.1f} %  {sym}')


if __name__ == '__main__':
    main(sys.argv[1])
