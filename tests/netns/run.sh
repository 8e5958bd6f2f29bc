#!/usr/bin/env bash
# tests/netns/run.sh: goshmem across "nodes" on one machine. It creates N
# network namespaces (gsns0..) joined by veth pairs to a bridge, on a private
# subnet of their own (10.213.7.0/24, inside the namespaces only), gives each
# one its own UTS namespace and hostname (gsnode<i>) when Open MPI's daemon
# starts there, and runs mpirun inside the first namespace with an rsh agent
# (agent.sh) that enters the namespace named by the host. Each namespace is
# one node to Open MPI, so goshmem puts same-namespace peers on shm and the
# others on ofi (tcp;ofi_rxm over the veth).
#
# It runs the integration suite (tests/integration/spmd) and
# examples/jacobi-cpu with NODES x PPN PEs (default 2 x 2), under mpirun
# and again without a launcher over the tcp bootstrap (a shell loop per
# namespace; BOOTSTRAPS="mpi tcp" picks which). Namespaces,
# links and the bridge are removed on every exit (trap), failure included.
#
# Needs root, ip (iproute2), unshare, mpirun, go. Usage: tests/netns/run.sh
# Environment: NODES (2), PPN (2), BOOTSTRAPS (mpi tcp), TCP_RUN (the checks of the tcp pass,
# a -run regexp; empty: all), GOSHMEM_OFI_PROVIDER (tcp;ofi_rxm),
# OUT (a build directory; a temporary one by default).
set -euo pipefail

NODES=${NODES:-2}
PPN=${PPN:-2}
NET=10.213.7
BR=gsbr$$
PREFIX=gsns$$-
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$(mktemp -d /tmp/goshmem-netns.XXXXXX)}
HERE=$(cd "$(dirname "$0")" && pwd)
# Open MPI's launcher by its own name: Debian's mpirun alternative may point to MPICH's.
MPIRUN=$(command -v mpirun.openmpi || command -v mpirun)

cleanup() {
	local rc=$?
	for ((i = 0; i < NODES; i++)); do
		ip netns pids "${PREFIX}$i" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
		ip netns del "${PREFIX}$i" 2>/dev/null || true
		ip link del "gsv$$-$i" 2>/dev/null || true
	done
	ip link del "$BR" 2>/dev/null || true
	exit $rc
}
trap cleanup EXIT INT TERM

[[ $(id -u) == 0 ]] || { echo "netns: needs root" >&2; exit 2; }

echo "netns: building into $OUT"
(cd "$ROOT" && go build -o "$OUT/spmd" ./tests/integration/spmd && go build -o "$OUT/jacobi-cpu" ./examples/jacobi-cpu)

ip link add "$BR" type bridge
ip link set "$BR" up
for ((i = 0; i < NODES; i++)); do
	ns=${PREFIX}$i
	ip netns add "$ns"
	# veth names are at most 15 bytes: gsv<pid>-<i> (root side), gse<i> inside.
	ip link add "gsv$$-$i" type veth peer name "gse$i" netns "$ns"
	ip link set "gsv$$-$i" master "$BR" up
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add "$NET.$((i + 1))/24" dev "gse$i"
	ip -n "$ns" link set "gse$i" up
done

# The hostfile's names are the namespaces' hostnames; the agent maps them.
hostfile=$OUT/hostfile
: >"$hostfile"
for ((i = 0; i < NODES; i++)); do echo "gsnode$i slots=$PPN" >>"$hostfile"; done
agent=$OUT/agent.sh
sed "s/@PREFIX@/$PREFIX/" "$HERE/agent.sh" >"$agent"
chmod +x "$agent"

np=$((NODES * PPN))
run() { # run <label> <program> [args...]: mpirun inside node 0's namespace
	local label=$1
	shift
	echo "netns: $label: $np PEs on $NODES namespaces"
	ip netns exec "${PREFIX}0" unshare --uts sh -c 'hostname gsnode0; exec "$@"' sh \
		"$MPIRUN" --allow-run-as-root --oversubscribe -np "$np" --hostfile "$hostfile" --map-by "ppr:$PPN:node" \
		--mca plm_rsh_agent "$agent" --mca orte_keep_fqdn_hostnames 1 \
		--mca oob_tcp_if_include "$NET.0/24" --mca btl tcp,self,vader --mca btl_tcp_if_include "$NET.0/24" \
		--mca pml ob1 --mca mtl ^ofi \
		-x PATH -x GOSHMEM_OFI_PROVIDER="${GOSHMEM_OFI_PROVIDER:-tcp;ofi_rxm}" -x GOSHMEM_INFO=1 -x GOSHMEM_TIMEOUT=60s \
		-x GOSHMEM_SYMMETRIC_SIZE=64M \
		"$@"
}

# tcprun <label> <program> [args...]: the same job without a launcher: in
# each namespace (its own UTS namespace, hostname gsnode<i>) a shell loop
# starts PPN PEs with the tcp bootstrap's variables; PE 0 listens on node
# 0's address.
tcprun() {
	local label=$1
	shift
	echo "netns: $label: $np PEs on $NODES namespaces, tcp bootstrap, no launcher"
	local tok pids=() rc=0
	tok=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
	for ((i = 0; i < NODES; i++)); do
		ip netns exec "${PREFIX}$i" unshare --uts env NODE="$i" PPN="$PPN" GOSHMEM_NPES="$np" \
			GOSHMEM_BOOTSTRAP_ADDR="$NET.1:29400" GOSHMEM_BOOTSTRAP_TOKEN="$tok" GOSHMEM_BOOTSTRAP_TIMEOUT=60s \
			GOSHMEM_OFI_PROVIDER="${GOSHMEM_OFI_PROVIDER:-tcp;ofi_rxm}" GOSHMEM_INFO=1 GOSHMEM_TIMEOUT=60s GOSHMEM_SYMMETRIC_SIZE=64M \
			sh -c 'hostname "gsnode$NODE"; pids=; p=0
				while [ $p -lt $PPN ]; do GOSHMEM_RANK=$((NODE * PPN + p)) "$@" & pids="$pids $!"; p=$((p + 1)); done
				rc=0; for q in $pids; do wait $q || rc=$?; done; exit $rc' sh "$@" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=$?; done
	return $rc
}

BOOTSTRAPS=${BOOTSTRAPS:-mpi tcp}
TCP_RUN=${TCP_RUN-^(rma|amo|coll|sync|mem|alloc|query)/}
for boot in $BOOTSTRAPS; do
	launcher=run
	[[ $boot == tcp ]] && launcher=tcprun
	log=$OUT/spmd-$boot.log
	args=()
	# The mpi pass runs every check; the tcp pass (what differs is the
	# bootstrap and its node grouping) the data-path ones, to stay fast.
	[[ $boot == tcp && -n $TCP_RUN ]] && args=(-run "$TCP_RUN")
	$launcher "integration suite ($boot)" "$OUT/spmd" "${args[@]}" 2>&1 | tee "$log"
	grep -q "spmd: np $np: [0-9]* passed, 0 failed" "$log" || { echo "netns: integration suite failed ($boot)" >&2; exit 1; }
	# Cross-namespace peers must have gone over ofi, same-namespace ones over shm.
	grep -q "transport ofi" "$log" || { echo "netns: no peer used the ofi transport ($boot)" >&2; exit 1; }
	if ((PPN > 1)); then grep -q "transport shm" "$log" || { echo "netns: no peer used shm ($boot)" >&2; exit 1; }; fi
	if [[ $boot == tcp ]]; then grep -q "bootstrap tcp" "$log" || { echo "netns: the tcp run did not use the tcp bootstrap" >&2; exit 1; }; fi

	log=$OUT/jacobi-$boot.log
	$launcher "jacobi-cpu ($boot)" "$OUT/jacobi-cpu" -nx 256 -ny 256 -niter 200 2>&1 | tee "$log"
done
echo "netns: PASS ($NODES namespaces x $PPN PEs; bootstraps: $BOOTSTRAPS)"
