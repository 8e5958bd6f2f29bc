#!/usr/bin/env bash
# run.sh BASE NEW OUT: goshmem-perf host rows and Init of 8 PEs, the build
# before this session's changes (BASE: goshmem-perf, spmd) against the build
# after (NEW), alternating B N N B, on this machine; NEW also with -ctx (the
# wait rows through the Context forms) and on ofi.
set -euo pipefail
base=$1 new=$2 out=$3
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=$(command -v mpirun.openmpi || command -v mpirun)
mpi() { "$MPIRUN" --oversubscribe --bind-to none "$@"; }
rows='^(put_lat|get_lat|p_lat|g_lat|pingpong_p|pingpong_putsignal|amo_fadd|barrier|lock|alloc_free)$'
args=(host -json -iters 50000 -warmup 2000 -maxsize 4096)
echo "$(nproc) CPUs; load before $(cut -d' ' -f1-3 /proc/loadavg); $(date -u)" >"$out/machine.txt"
: >"$out/commands.txt"
for pass in 1 2; do
	for who in base new new base; do
		bin=${!who}
		echo "mpirun -np 2 $who/goshmem-perf ${args[*]} -only '$rows'" >>"$out/commands.txt"
		mpi -np 2 "$bin/goshmem-perf" "${args[@]}" -only "$rows" >>"$out/shm-$who.jsonl" 2>>"$out/shm-$who.log"
	done
	mpi -np 2 "$new/goshmem-perf" "${args[@]}" -ctx -only '^(pingpong_p|pingpong_putsignal|barrier|lock)$' >>"$out/shm-newctx.jsonl" 2>>"$out/shm-newctx.log"
	mpi -np 2 "$new/goshmem-perf" "${args[@]}" -only '^(pingpong_p|pingpong_putsignal|barrier|lock)$' >>"$out/shm-newplain.jsonl" 2>>"$out/shm-newplain.log"
	for who in base new new base; do
		bin=${!who}
		GOSHMEM_TRANSPORT=ofi mpi -x GOSHMEM_TRANSPORT -np 2 "$bin/goshmem-perf" host -json -iters 20000 -warmup 1000 -maxsize 4096 \
			-only '^(put_lat|p_lat|amo_fadd)$' >>"$out/ofi-$who.jsonl" 2>>"$out/ofi-$who.log"
	done
done
for i in 1 2 3 4 5; do
	for who in base new; do
		bin=${!who}
		echo "$who run $i: $(mpi -np 8 "$bin/spmd" -mode initfin -heap 0 2>&1 | grep '^initfin:')" >>"$out/initfin.txt"
	done
done
echo "load after $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
