#!/bin/sh
# Open MPI rsh agent for tests/netns/run.sh (a template: run.sh fills in the
# namespace prefix). Called as `agent.sh [options] gsnode<i> command...`: it
# enters network namespace @PREFIX@<i>, in a UTS namespace of its own whose
# hostname is gsnode<i> (so Open MPI sees one node per namespace), and runs
# the command there through sh, as rsh would.
while [ $# -gt 0 ]; do
	case "$1" in
	-*) shift ;; # rsh/ssh options Open MPI may add (-x, -T ...)
	*) break ;;
	esac
done
host=$1
shift
i=${host#gsnode}
exec ip netns exec "@PREFIX@$i" unshare --uts sh -c "hostname $host; $*"
