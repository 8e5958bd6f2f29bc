#!/usr/bin/env bash
# scripts/test.sh: make test's checks, arranged for a machine of few cores
# (CI has two) on which CUDA's nvcc may still have to be installed.
#
#   1. scripts/deps.sh --cuda (nvcc, cuobjdump, libcuda1) starts in the
#      background at once: its download and unpacking overlap the checks
#      of step 2.
#   2. The foreground runs the checks whose outcome does not depend on what
#      is installed (EARLY).
#   3. It waits for the install, then runs the checks that look at the
#      installed packages (LATE): modcheck's buildcheck hides the CUDA
#      packages' files, unit's internal/cgo/cuda checks driver.h against
#      cuda.h and loads libcuda, and integration runs the GPU tests.
#   4. Once nvcc is installed, its compiles (make test-nvcc: hdrcheck's nvcc
#      groups, the IBGDA kernels, fatbins; one core each) run in the
#      background at the lowest priority (nice 19): they take the cores the
#      foreground leaves idle and barely slow it.
#
# Every check counts. The first foreground failure ends the run: the nvcc
# jobs are stopped, an install still running is waited for (a dpkg run cut
# short breaks the machine's package database). A failed install or nvcc
# job fails the run, at the latest when the foreground is done. The
# background's output is printed in one piece (each nvcc job's in one
# block) when it is done; bin/test/ keeps it. Each step's wall time is
# printed, and a summary at the end. The go test runs get -vet=off
# (GOTEST_FLAGS): lint's go vet has checked every package, tests included.
#
# Run by make test (after make deps), with MAKE set to the make to use.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
MAKE=${MAKE:-make}
EARLY=${EARLY:-lint hdrcheck-host ibgdacheck-host gpulib-check fuzz}
LATE=${LATE:-modcheck unit integration}
export GOTEST_FLAGS=${GOTEST_FLAGS--vet=off}
logs=bin/test
mkdir -p "$logs"
rm -f "$logs"/deps-cuda.* "$logs"/nvcc.*
t0=$(date +%s)
summary=()
failed=""

# 1. the install, in the background at normal priority
bash scripts/deps.sh --cuda >"$logs/deps-cuda.log" 2>&1 </dev/null &
inst=$!
inst_rc="" # its exit status, once waited for
inst_wait() {
	[ -z "$inst_rc" ] || return 0
	local w
	w=$(date +%s)
	if kill -0 "$inst" 2>/dev/null; then echo "==== make test: waiting for scripts/deps.sh --cuda"; fi
	wait "$inst"
	inst_rc=$?
	echo "==== make test: scripts/deps.sh --cuda (exit $inst_rc; bin/test/deps-cuda.log)"
	cat "$logs/deps-cuda.log"
	summary+=("deps.sh --cuda (background): exit $inst_rc, waited $(($(date +%s) - w)) s for it")
	[ "$inst_rc" = 0 ] || failed=${failed:-"scripts/deps.sh --cuda (background)"}
}

# 4. the nvcc jobs, in a process group of their own (set -m) so that they
# can be stopped as a whole; the exit status lands in nvcc.rc
nvcc=""
nvcc_start() {
	[ -z "$nvcc" ] && [ "$inst_rc" = 0 ] || return 0
	set -m
	(
		# shellcheck disable=SC2086 # MAKE may carry arguments
		nice -n 19 $MAKE --no-print-directory test-nvcc >"$logs/nvcc.log" 2>&1 </dev/null
		echo $? >"$logs/nvcc.rc"
	) &
	nvcc=$!
	set +m
}
nvcc_stop() {
	[ -n "$nvcc" ] || return 0
	kill -TERM -- -"$nvcc" 2>/dev/null
	wait "$nvcc" 2>/dev/null
}
nvcc_print() { # nvcc_print WHY
	echo "==== make test: the nvcc jobs (make test-nvcc, $1; bin/test/nvcc.log)"
	cat "$logs/nvcc.log"
	echo "==== make test: end of the nvcc jobs' output"
}
trap 'nvcc_stop; wait "$inst" 2>/dev/null; exit 130' INT TERM

step() { # step TARGET: run one foreground check; 1 when it (or an nvcc job) failed
	local s
	s=$(date +%s)
	echo "==== make test: $1"
	if ! $MAKE --no-print-directory "$1"; then
		failed=$1
		summary+=("$1: FAILED after $(($(date +%s) - s)) s")
		return 1
	fi
	summary+=("$1: $(($(date +%s) - s)) s")
	if [ -s "$logs/nvcc.rc" ] && [ "$(cat "$logs/nvcc.rc")" != 0 ]; then
		failed="test-nvcc (background)"
		return 1
	fi
}

for t in $EARLY; do
	step "$t" || break
	# the install may be done: start the nvcc jobs now
	if [ -z "$inst_rc" ] && ! kill -0 "$inst" 2>/dev/null; then inst_wait; nvcc_start; fi
	[ -z "$failed" ] || break
done
inst_wait
if [ -z "$failed" ]; then
	nvcc_start
	for t in $LATE; do step "$t" || break; done
fi

if [ -n "$nvcc" ]; then
	if [ -n "$failed" ] && [ ! -s "$logs/nvcc.rc" ]; then
		nvcc_stop
		nvcc_print "stopped: $failed failed"
		summary+=("test-nvcc (background): stopped")
	else
		w=$(date +%s)
		[ -s "$logs/nvcc.rc" ] || echo "==== make test: foreground done; waiting for the nvcc jobs"
		wait "$nvcc"
		rc=$(cat "$logs/nvcc.rc" 2>/dev/null || echo none)
		if [ "$rc" = 0 ]; then
			nvcc_print "passed"
			summary+=("test-nvcc (background): passed, waited $(($(date +%s) - w)) s for it")
		else
			nvcc_print "FAILED, exit $rc"
			summary+=("test-nvcc (background): FAILED, exit $rc")
			failed=${failed:-"test-nvcc (background)"}
		fi
	fi
fi

echo "==== make test: $(($(date +%s) - t0)) s in all"
printf '  %s\n' "${summary[@]}"
if [ -n "$failed" ]; then
	echo "make test: FAILED ($failed)"
	exit 1
fi
echo "make test: all checks passed"
