package integration

// Init and Finalize under faults (issue 15, item 6): a setting that differs
// on one PE, a failure local to one PE, a PE killed during Init, a
// /dev/shm too small for the node's heaps, and a peer that never calls
// Finalize. Every PE must report, no job may hang, and nothing may be left
// in /dev/shm. The faults are injected per rank by the spmd program
// (SPMD_RANK_ENV and friends, spmd/initfault.go).

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
)

// initReport is one PE's Init outcome as spmd -mode init-report printed it.
type initReport struct {
	ok        bool
	sentinels string // "ErrNotSymmetric" (every sentinel the error matches)
	msg       string
	hints     []string
}

var (
	reportFailRE = regexp.MustCompile(`(?m)^init-report: PE (\d+): Init failed \(([^)]*)\): (.*)$`)
	reportOKRE   = regexp.MustCompile(`(?m)^init-report: PE (\d+): Init ok$`)
	reportHintRE = regexp.MustCompile(`(?m)^init-report: PE (\d+): hint: (.*)$`)
)

func parseReports(out string) map[int]*initReport {
	reps := map[int]*initReport{}
	get := func(s string) *initReport {
		pe, _ := strconv.Atoi(s)
		if reps[pe] == nil {
			reps[pe] = &initReport{}
		}
		return reps[pe]
	}
	for _, m := range reportFailRE.FindAllStringSubmatch(out, -1) {
		r := get(m[1])
		r.sentinels, r.msg = m[2], m[3]
	}
	for _, m := range reportOKRE.FindAllStringSubmatch(out, -1) {
		get(m[1]).ok = true
	}
	for _, m := range reportHintRE.FindAllStringSubmatch(out, -1) {
		r := get(m[1])
		r.hints = append(r.hints, m[2])
	}
	return reps
}

// initFails runs spmd -mode init-report on np PEs (env on every PE,
// rankEnv as SPMD_RANK_ENV) and asserts that the job ended by itself
// (launch.run fails a job still running after 60 s) with a non-zero
// status and that every PE printed a failed Init. It returns the reports.
func initFails(t *testing.T, l launch, rankEnv string) map[int]*initReport {
	t.Helper()
	// Every PE waits for the others' reports before exiting: mpirun ends
	// the job at the first non-zero exit.
	l.env = append(append([]string(nil), l.env...), "SPMD_EXIT_SYNC="+t.TempDir(), "SPMD_RANK_ENV="+rankEnv)
	l.args = append([]string{"-mode", "init-report"}, l.args...)
	r := l.run(t, 60*time.Second)
	t.Logf("np %d %v SPMD_RANK_ENV=%q: exit %d; output:\n%s", l.np, l.env, rankEnv, r.code, r.out)
	assert.NotEqual(t, 0, r.code, "mpirun exit status")
	assert.NotContains(t, r.out, "SIGBUS")
	assert.NotContains(t, r.out, "unexpected fault address")
	reps := parseReports(r.out)
	for pe := 0; pe < l.np; pe++ {
		rep := reps[pe]
		if !assert.NotNil(t, rep, "PE %d printed no Init outcome", pe) {
			continue
		}
		assert.False(t, rep.ok, "PE %d: Init succeeded", pe)
		assert.NotEmpty(t, rep.msg, "PE %d: no Init error", pe)
	}
	return reps
}

// others is how the runtime lists every PE but PE 1 ("PE 0", "PEs 0, 2-3").
func others(np int) string {
	switch np {
	case 2:
		return "PE 0"
	case 3:
		return "PEs 0, 2"
	}
	return fmt.Sprintf("PEs 0, 2-%d", np-1)
}

// TestInitSettingDiffers: one PE (PE 1) runs with a different value of a
// setting every PE must share. Every PE's Init fails with ErrNotSymmetric
// naming the setting, both values and the PEs that have each; the job
// ends by itself with a non-zero status.
func TestInitSettingDiffers(t *testing.T) {
	needMPI(t)
	cases := []struct {
		name    string
		env     []string // every PE
		pe1     string   // NAME=VALUE on PE 1
		args    []string
		setting string
		others  string // the values as the error quotes them
		one     string
	}{
		{"transport", nil, "GOSHMEM_TRANSPORT=ofi", nil, "GOSHMEM_TRANSPORT", "auto", "ofi"},
		{"ofi-provider", []string{"GOSHMEM_TRANSPORT=ofi", "GOSHMEM_OFI_PROVIDER=tcp;ofi_rxm"}, "GOSHMEM_OFI_PROVIDER=sockets", nil,
			"GOSHMEM_OFI_PROVIDER", "tcp;ofi_rxm", "sockets"},
		{"gpu", []string{"GOSHMEM_GPU=auto"}, "GOSHMEM_GPU=off", nil, "GOSHMEM_GPU", "auto", "off"},
		{"debug", []string{"GOSHMEM_DEBUG=0"}, "GOSHMEM_DEBUG=1", nil, "GOSHMEM_DEBUG", "false", "true"},
		{"symmetric-size", []string{"GOSHMEM_SYMMETRIC_SIZE=32M"}, "GOSHMEM_SYMMETRIC_SIZE=64M", []string{"-heap", "0"},
			"GOSHMEM_SYMMETRIC_SIZE", "33554432", "67108864"},
		{"max-teams", nil, "GOSHMEM_MAX_TEAMS=64", nil, "GOSHMEM_MAX_TEAMS", "1088", "64"},
	}
	for _, c := range cases {
		for _, np := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/np%d", c.name, np), func(t *testing.T) {
				reps := initFails(t, launch{np: np, env: c.env, args: c.args}, "1:"+c.pe1)
				want := fmt.Sprintf("settings differ across PEs: %s: %q on %s, %q on PE 1", c.setting, c.others, others(np), c.one)
				for pe, rep := range reps {
					assert.Contains(t, rep.sentinels, "ErrNotSymmetric", "PE %d", pe)
					assert.Contains(t, rep.msg, fmt.Sprintf("PE %d: Init: ", pe))
					assert.Contains(t, rep.msg, want, "PE %d", pe)
				}
			})
		}
	}
}

// TestInitLocalFailure: Init fails on one PE (or every PE) for a reason
// only that PE sees: a bad value of its own, a libfabric provider hidden
// from it (FI_PROVIDER), a file size limit below the heap (RLIMIT_FSIZE), a
// missing libcuda with GOSHMEM_GPU=on. Every PE's Init fails naming each
// failing PE and its error, matching the failing PE's sentinel; no hang.
func TestInitLocalFailure(t *testing.T) {
	needMPI(t)
	cases := []struct {
		name     string
		env      []string // every PE
		rankEnv  string   // SPMD_RANK_ENV
		sentinel string
		// want: what PE pe's error must contain.
		want func(pe, np int) []string
		hint string // a hint every PE must carry ("": not checked)
	}{
		{"transport-bogus-on-one", nil, "1:GOSHMEM_TRANSPORT=bogus", "ErrNotSymmetric",
			func(pe, np int) []string {
				return []string{fmt.Sprintf(`GOSHMEM_TRANSPORT: "auto" on %s, "bogus" on PE 1`, others(np))}
			}, ""},
		{"transport-bogus-on-all", []string{"GOSHMEM_TRANSPORT=bogus"}, "", "ErrNotSupported",
			func(pe, np int) []string {
				// The same setting everywhere: every PE finds it bad alone.
				return []string{fmt.Sprintf(`PE %d: Init: GOSHMEM_TRANSPORT="bogus" is not a transport`, pe)}
			}, "use GOSHMEM_TRANSPORT=auto, shm or ofi"},
		{"env-invalid-on-one", nil, "1:GOSHMEM_DEBUG=2", "ErrInvalidArgument",
			func(pe, np int) []string {
				w := []string{`PE 1: Init: environment: env: GOSHMEM_DEBUG="2": not a boolean`}
				if pe != 1 {
					w = append(w, "settings failed on another PE: PE 1: Init: ", "(settings)")
				}
				return w
			}, "debug checks"},
		{"max-teams-out-of-range-on-one", nil, "1:GOSHMEM_MAX_TEAMS=1", "ErrInvalidArgument",
			func(pe, np int) []string {
				w := []string{`PE 1: Init: GOSHMEM_MAX_TEAMS="1"; must be a number of team slots in [2, 16384]`}
				if pe != 1 {
					w = append(w, "settings failed on another PE: PE 1: Init: ", "(settings)")
				}
				return w
			}, "set GOSHMEM_MAX_TEAMS to a number in [2, 16384] (default 1088), the same on every PE"},
		{"bootstrap-invalid-on-one", nil, "1:GOSHMEM_BOOTSTRAP=bogus", "ErrInvalidArgument",
			func(pe, np int) []string {
				return []string{`PE 1: Init: environment: Init: GOSHMEM_BOOTSTRAP="bogus"; want auto, mpi, tcp or single`}
			}, ""},
		{"bootstrap-single-on-one", nil, "1:GOSHMEM_BOOTSTRAP=single", "ErrInvalidArgument",
			func(pe, np int) []string {
				return []string{fmt.Sprintf(`PE 1: Init: environment: Init: GOSHMEM_BOOTSTRAP=single in a job of %d ranks started by a launcher`, np)}
			}, "unset GOSHMEM_BOOTSTRAP"},
		{"ofi-provider-hidden-on-one", []string{"GOSHMEM_TRANSPORT=ofi"}, "1:FI_PROVIDER=shm", "ErrNotSupported",
			func(pe, np int) []string {
				w := []string{"PE 1: Init: ofi", `fi_getinfo for provider "tcp;ofi_rxm"`}
				if pe != 1 {
					w = append(w, "host transports failed on another PE: PE 1: Init: ofi", "(ofi)")
				}
				return w
			}, "set GOSHMEM_OFI_PROVIDER to one of"},
		{"heap-file-limit-on-one", nil, "1:SPMD_FSIZE=16M", "ErrHeapExhausted",
			func(pe, np int) []string {
				w := []string{"PE 1: Init: symmetric heap of 33554432 bytes", "file too large"}
				if pe != 1 {
					w = append(w, "symmetric heap failed on another PE: PE 1: Init: symmetric heap of ", "(symmetric heap)")
				}
				return w
			}, "lower GOSHMEM_SYMMETRIC_SIZE"},
		// Without a GPU every PE fails (each is named); with one, PE 1
		// alone. Either way every PE names PE 1 and its error.
		{"gpu-on-libcuda-missing-on-one", []string{"GOSHMEM_GPU=on"}, "1:GOSHMEM_LIBCUDA=/nonexistent/libcuda.so.1", "ErrNotSupported",
			func(pe, np int) []string {
				w := []string{`PE 1: Init: no GPU: cuda: Load: cannot dlopen "/nonexistent/libcuda.so.1"`}
				if pe != 1 {
					w = append(w, "(GPU heap)")
				}
				return w
			}, ""},
	}
	for _, c := range cases {
		for _, np := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/np%d", c.name, np), func(t *testing.T) {
				reps := initFails(t, launch{np: np, env: c.env}, c.rankEnv)
				for pe, rep := range reps {
					assert.Contains(t, rep.sentinels, c.sentinel, "PE %d", pe)
					for _, w := range c.want(pe, np) {
						assert.Contains(t, rep.msg, w, "PE %d", pe)
					}
					if c.hint != "" {
						assert.True(t, anyContains(rep.hints, c.hint), "PE %d: no hint %q among %q", pe, c.hint, rep.hints)
					}
				}
			})
		}
	}
}

func anyContains(list []string, s string) bool {
	for _, x := range list {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

// shmNamespace is the wrapper that runs a job in a private mount namespace
// with its own tmpfs of size bytes on /dev/shm, and after the job prints
// what is left there ("shm-check: entries: ..." and "shm-check: used N").
// It skips the test when the process may not make one (not root, or no
// CAP_SYS_ADMIN) and fails it when it may and cannot.
func shmNamespace(t *testing.T, size string) []string {
	t.Helper()
	w, reason := shmWrapper(size)
	if w == nil {
		if os.Geteuid() == 0 && hasCapSysAdmin() {
			t.Fatalf("root with CAP_SYS_ADMIN, but no private /dev/shm: %s", reason)
		}
		t.Skipf("no private /dev/shm: %s", reason)
	}
	return w
}

// shmWrapper is shmNamespace's wrapper, or nil and why it cannot be made.
func shmWrapper(size string) ([]string, string) {
	if os.Geteuid() != 0 {
		return nil, "needs root (a mount namespace and a tmpfs mount)"
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		return nil, "unshare (util-linux) not found in PATH"
	}
	mount := fmt.Sprintf("mount --make-rprivate / && mount -t tmpfs -o size=%s tmpfs /dev/shm", size)
	if out, err := exec.Command("unshare", "-m", "sh", "-c", mount).CombinedOutput(); err != nil {
		return nil, fmt.Sprintf("unshare -m + mount tmpfs: %v: %s", err, strings.TrimSpace(string(out)))
	}
	script := mount + ` || exit 97
"$@"
rc=$?
echo "shm-check: entries: [$(ls -A /dev/shm | tr '\n' ' ')]"
echo "shm-check: used $(df -B1 --output=used /dev/shm | tail -n 1 | tr -d ' ')"
exit $rc`
	return []string{"unshare", "-m", "sh", "-c", script, "sh"}, ""
}

// hasCapSysAdmin reports whether CAP_SYS_ADMIN is in this process's
// effective set.
func hasCapSysAdmin() bool {
	v, err := testutil.SelfStatus("CapEff")
	if err != nil {
		return false
	}
	caps, err := strconv.ParseUint(v, 16, 64)
	return err == nil && caps&(1<<21) != 0
}

var shmCheckRE = regexp.MustCompile(`(?m)^shm-check: entries: \[(.*)\]\nshm-check: used (\d+)$`)

// assertShmEmpty asserts the private /dev/shm was empty after the job.
func assertShmEmpty(t *testing.T, out string) {
	t.Helper()
	m := shmCheckRE.FindStringSubmatch(out)
	if !assert.NotNil(t, m, "no shm-check lines in the output") {
		return
	}
	assert.Empty(t, strings.TrimSpace(m[1]), "entries left in /dev/shm")
	assert.Equal(t, "0", m[2], "bytes still in use in /dev/shm (a mapping or descriptor survived the job)")
}

// TestInitKilled: PE 1 is killed (SIGKILL) while it waits in one of Init's
// bootstrap exchanges, which PE 0 is kept from reaching (SPMD_BOOT_DELAY).
// The job must end by itself (mpirun reports the death) with a non-zero
// status, and nothing may be left in /dev/shm: the heaps have no name and
// go with the last process that maps them. With root the job runs in its
// own /dev/shm, which must be empty afterwards; without, the shared
// /dev/shm must have nothing new naming goshmem or a pid of the job.
func TestInitKilled(t *testing.T) {
	needMPI(t)
	cases := []struct {
		name string
		np   int
		at   int // PE 1 is killed in this bootstrap Allgather, PE 0 sleeps before it
		env  []string
	}{
		{"settings-exchange", 2, 1, nil},                           // before any heap exists
		{"heap-mapped", 2, 3, nil},                                 // every heap created and mapped
		{"heap-mapped", 4, 3, nil},                                 //
		{"ofi-endpoints", 2, 5, []string{"GOSHMEM_TRANSPORT=ofi"}}, // ofi endpoints open
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/np%d", c.name, c.np), func(t *testing.T) {
			wrap, reason := shmWrapper("256m")
			if wrap == nil {
				t.Logf("shared /dev/shm (%s)", reason)
			}
			before := shmEntries(t)
			traceRE := regexp.MustCompile(`^spmd: rank (\d+) \(pid (\d+)\): bootstrap allgather #(\d+)$`)
			var mu sync.Mutex
			pids := map[string]bool{}
			killed := 0
			l := launch{np: c.np, wrap: wrap, args: []string{"-mode", "init-report"},
				env: append([]string{"SPMD_BOOT_TRACE=1", fmt.Sprintf("SPMD_RANK_ENV=0:SPMD_BOOT_DELAY=%d:30s", c.at)}, c.env...),
				line: func(s string) {
					m := traceRE.FindStringSubmatch(s)
					if m == nil {
						return
					}
					mu.Lock()
					defer mu.Unlock()
					pids[m[2]] = true
					if m[1] == "1" && m[3] == strconv.Itoa(c.at) && killed == 0 {
						killed, _ = strconv.Atoi(m[2])
						_ = syscall.Kill(killed, syscall.SIGKILL)
					}
				}}
			r := l.run(t, 60*time.Second)
			t.Logf("exit %d after %v; output:\n%s", r.code, r.wall.Round(time.Millisecond), r.out)
			require.NotZero(t, killed, "PE 1 never reached bootstrap allgather #%d", c.at)
			assert.NotEqual(t, 0, r.code, "mpirun exit status")
			assert.Regexp(t, `rank 1 with PID \d+ on node \S+ exited on signal 9`, r.out, "mpirun does not report PE 1's death")
			assert.NotContains(t, r.out, "init-report: PE", "a PE got past Init")
			if wrap != nil {
				assertShmEmpty(t, r.out)
				return
			}
			for name := range shmEntries(t) {
				if before[name] {
					continue
				}
				t.Logf("new in /dev/shm: %s", name)
				assert.NotContains(t, name, "goshmem", "left in /dev/shm")
				for pid := range pids {
					assert.NotContains(t, name, pid, "left in /dev/shm, named with a pid of the job")
				}
			}
		})
	}
}

// shmEntries is the names in /dev/shm.
func shmEntries(t *testing.T) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir("/dev/shm")
	require.NoError(t, err)
	m := map[string]bool{}
	for _, e := range ents {
		m[e.Name()] = true
	}
	return m
}

// TestInitShmTooSmall: the node's PEs together ask for more symmetric heap
// than /dev/shm holds (a 64 MiB tmpfs in a private mount namespace). Every
// PE's Init fails with ErrHeapExhausted, saying /dev/shm and to lower
// GOSHMEM_SYMMETRIC_SIZE, instead of a SIGBUS at a first touch; heaps that
// fit still start. Each PE's region also holds the team slots (about 19 MiB
// at the default GOSHMEM_MAX_TEAMS), so every heap here fits one region and
// only the node's total exceeds the tmpfs. Needs root (skips otherwise).
func TestInitShmTooSmall(t *testing.T) {
	needMPI(t)
	for _, c := range []struct {
		np   int
		heap string
	}{{2, "40M"}, {4, "24M"}} {
		t.Run(fmt.Sprintf("np%d-%s", c.np, c.heap), func(t *testing.T) {
			wrap := shmNamespace(t, "64m")
			l := launch{np: c.np, wrap: wrap, args: []string{"-heap", "0"}, env: []string{"GOSHMEM_SYMMETRIC_SIZE=" + c.heap}}
			reps := initFails(t, l, "")
			for pe, rep := range reps {
				assert.Contains(t, rep.sentinels, "ErrHeapExhausted", "PE %d", pe)
				assert.Contains(t, rep.msg, fmt.Sprintf("the %d PEs of the node need", c.np), "PE %d", pe)
				assert.Contains(t, rep.msg, "/dev/shm", "PE %d", pe)
				assert.Contains(t, rep.msg, "GOSHMEM_SYMMETRIC_SIZE", "PE %d", pe)
				assert.True(t, anyContains(rep.hints, "lower GOSHMEM_SYMMETRIC_SIZE"), "PE %d: hints %q", pe, rep.hints)
			}
		})
	}
	t.Run("np2-8M-fits", func(t *testing.T) {
		wrap := shmNamespace(t, "64m")
		r := launch{np: 2, wrap: wrap, args: []string{"-mode", "init-report", "-heap", "0"},
			env: []string{"GOSHMEM_SYMMETRIC_SIZE=8M"}}.run(t, 60*time.Second)
		require.Equal(t, 0, r.code, "output:\n%s", r.out)
		reps := parseReports(r.out)
		for pe := 0; pe < 2; pe++ {
			if assert.NotNil(t, reps[pe], "PE %d printed no Init outcome", pe) {
				assert.True(t, reps[pe].ok, "PE %d: %s", pe, reps[pe].msg)
			}
		}
		assertShmEmpty(t, r.out)
	})
}

// TestFinalizePeerMissing: PE 1 never calls Finalize (it sleeps, then
// exits 0). Under GOSHMEM_TIMEOUT=2s PE 0's Finalize returns ErrTimeout
// naming PE 1 instead of waiting for it; PE 0 exits non-zero, which ends
// the job.
func TestFinalizePeerMissing(t *testing.T) {
	needMPI(t)
	r := job(t, 2, 60*time.Second, []string{"GOSHMEM_TIMEOUT=2s"}, "-mode", "finalize-skip")
	t.Logf("exit %d after %v; output:\n%s", r.code, r.wall.Round(time.Millisecond), r.out)
	assert.NotEqual(t, 0, r.code, "mpirun exit status")
	assert.Contains(t, r.out, "spmd: PE 1: skipping Finalize")
	assert.NotContains(t, r.out, "finalize-skip: PE 0: Finalize ok")
	m := regexp.MustCompile(`(?m)^finalize-skip: PE 0: Finalize failed \(([^)]*)\): (.*)$`).FindStringSubmatch(r.out)
	require.NotNil(t, m, "PE 0 did not report Finalize's error")
	assert.Contains(t, m[1], "ErrTimeout")
	assert.Contains(t, m[2], "PEs [1] have not called Finalize")
	assert.Contains(t, m[2], "GOSHMEM_TIMEOUT=2s")
	assert.Contains(t, r.out, "finalize-skip: PE 0: hint: every PE must call Finalize")
}
