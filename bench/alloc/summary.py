#!/usr/bin/env python3
"""bench/alloc/summary.py DIR: the rows of bench/alloc/rows.sh's jobs in DIR.

Every DIR/*.jsonl (goshmem-perf's alloc rows, one job per line group): each row's
median and p99 in microseconds, and its ratio to the cuMemAlloc median of the same
job (the row named cumemalloc that precedes it); the stream_settled and stream_in_prep
rows with their largest call and their time beyond the settled median. Then NVSHMEM's lines
(DIR/nvshmem-np*.txt) as nvshmem_alloc printed them.
"""
import glob
import json
import os
import sys


def main(d):
    for f in sorted(glob.glob(os.path.join(d, "*.jsonl"))):
        print(os.path.basename(f))
        base = None
        for line in open(f):
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if r["name"] == "cumemalloc":
                base = r["median_us"]
                print("  %-14s %5d MiB n=%2d median %9.1f p99 %9.1f" % (
                    r["name"], r["size"] >> 20, r["iters"], r["median_us"], r["p99_us"]))
                continue
            if r["name"].startswith("stream_"):
                # the prep rows: a stream barrier, not an allocation
                print("  %-14s n=%4d median %6.1f p99 %7.1f; %s" % (
                    r["name"], r["iters"], r["median_us"], r["p99_us"], r["timing"].split("; ", 1)[-1]))
                continue
            ratio = " %6.2fx cuMemAlloc" % (r["median_us"] / base) if base else ""
            print("  %-14s %5d MiB n=%2d median %9.1f p99 %9.1f%s" % (
                r["name"], r["size"] >> 20, r["iters"], r["median_us"], r["p99_us"], ratio))
    for f in sorted(glob.glob(os.path.join(d, "nvshmem-np*.txt"))):
        print(os.path.basename(f))
        for line in open(f):
            print("  " + line.rstrip())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summary.py DIR")
    main(sys.argv[1])
