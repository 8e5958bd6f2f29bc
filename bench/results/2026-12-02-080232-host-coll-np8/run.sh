#!/usr/bin/env bash
# run.sh (from the repository root, on branch h-coll8 at 7f3d26a): how np8/ and np2-np4/ were made.
# Builds goshmem-perf at main (d869d3c, before) and at HEAD (after) and the OpenSHMEM peer
# (bench/oshmem/oshbench.c), then abc.sh: bench/coll/run.sh's rows and commands, with the three
# jobs of every row back to back in each round, their order rotating by round and row; then the
# tables. (The run itself was these steps typed by hand, binaries in /tmp/c8; commands.txt in
# np8/ and np2-np4/ lists every job exactly as it ran.)
set -euo pipefail
d="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
b="$(mktemp -d)"; trap 'rm -rf "$b"' EXIT
mkdir "$b/main-src"; git archive d869d3c | tar -x -C "$b/main-src"
(cd "$b/main-src" && go build -ldflags "-X main.version=d869d3c" -o "$b/main" ./cmd/goshmem-perf)
go build -ldflags "-X main.version=$(git rev-parse --short HEAD)" -o "$b/branch" ./cmd/goshmem-perf
oshcc -O2 -std=c11 -Wall -o "$b/oshbench" bench/oshmem/oshbench.c
COLL_NPS=8 COLL_ROUNDS=5 bash "$d/abc.sh" "$d/np8" "$b/main" "$b/branch" "$b/oshbench"
COLL_NPS="2 4" COLL_ROUNDS=5 bash "$d/abc.sh" "$d/np2-np4" "$b/main" "$b/branch" "$b/oshbench"
python3 "$d/table.py" "$d/np8" 8 >"$d/table-np8.md"
for np in 2 4; do python3 "$d/table.py" "$d/np2-np4" $np >"$d/table-np$np.md"; done
# runsh-np8/: bench/coll/run.sh itself at HEAD (goshmem vs OpenSHMEM, 8 PEs, 3 rounds).
COLL_NPS=8 COLL_ROUNDS=3 bash bench/coll/run.sh "$d/runsh-np8"
