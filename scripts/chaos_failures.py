#!/usr/bin/env python3
"""What the failed requests of a chaos run were (docs/RELIABILITY.md).

Reads a history file a cluster chaos run wrote
(/tmp/tally-chaos-<N>-nodes-<seed>.history: its "fault" lines and its
"failed attempt" lines) and prints the failed attempts that count against
issue 14's availability bar: sent to another node than the faulted one,
during a fault of one node, after its first GRACE seconds (2 by default).
They are counted by error (numbers replaced by N), by kind of fault, and
by how far into the fault they were sent.

    scripts/chaos_failures.py /tmp/tally-chaos-5-nodes-<seed>.history [GRACE]
"""
import collections
import re
import sys

FAULT = re.compile(r"fault (\S+) nodes ([\d ]+?)\s+([\d.]+)-([\d.]+) s")
FAILED = re.compile(r"failed attempt\s+node (\d+)\s+([\d.]+)-([\d.]+) s\s+(.*)")


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    grace = float(argv[2]) if len(argv) > 2 else 2.0
    faults, failed = [], []
    with open(argv[1], encoding="utf-8", errors="replace") as history:
        for line in history:
            m = FAULT.match(line)
            if m:
                nodes = [int(n) for n in m.group(2).split()]
                faults.append((m.group(1), nodes, float(m.group(3)), float(m.group(4))))
                continue
            m = FAILED.match(line)
            if m:
                failed.append((int(m.group(1)), float(m.group(2)), m.group(4)))
    by_error, by_fault, by_offset = (collections.Counter() for _ in range(3))
    for node, sent, why in failed:
        under_way = [f for f in faults if f[2] <= sent < f[3]]
        if len(under_way) != 1 or len(under_way[0][1]) != 1:
            continue  # no fault, or several: not the bar's class
        kind, nodes, start, _ = under_way[0]
        if nodes[0] == node or sent < start + grace:
            continue
        by_error[re.sub(r"\d+", "N", why)[:110]] += 1
        by_fault[kind] += 1
        offset = sent - start
        by_offset["%.1f-%.1f s" % (offset - offset % 0.5, offset - offset % 0.5 + 0.5)] += 1
    total = sum(by_fault.values())
    print("%d failed attempts after the first %.1f s of a one-node fault, to other nodes"
          % (total, grace))
    print("\nby error:")
    for why, n in by_error.most_common():
        print("%6d  %s" % (n, why))
    print("\nby fault:")
    for kind, n in by_fault.most_common():
        print("%6d  %s" % (n, kind))
    print("\nby time into the fault:")
    for span, n in sorted(by_offset.items(), key=lambda kv: float(kv[0].split("-")[0])):
        print("%6d  %s" % (n, span))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
