package integration

// The launcher-free jobs: PEs started by a shell loop with the tcp
// bootstrap's variables (GOSHMEM_RANK/GOSHMEM_NPES, or torchrun's
// RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT), and PEs started by this test
// through the unique-ID API (tests/integration/uidpe).

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

var uidpeBin string // the unique-ID PE program (built by TestMain)

func needBuild(t *testing.T) {
	t.Helper()
	require.NoError(t, buildErr)
}

// loopScript starts one process per rank in the background, as a user's
// shell loop would, and exits with the first non-zero status among them.
// Positional parameters: the program and its arguments. $NP PEs; the
// variable named by $RANKVAR gets each one's rank.
const loopScript = `
pids=
r=0
while [ "$r" -lt "$NP" ]; do
	env "$RANKVAR=$r" "$@" &
	pids="$pids $!"
	r=$((r + 1))
done
rc=0
for p in $pids; do
	wait "$p" || { s=$?; [ "$rc" -ne 0 ] || rc=$s; }
done
exit $rc
`

// freePort returns a loopback address whose port was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a := ln.Addr().String()
	require.NoError(t, ln.Close())
	return a
}

func token(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// tcpJob runs np copies of the spmd program from a shell loop with the
// tcp bootstrap (GOSHMEM_RANK, GOSHMEM_NPES, GOSHMEM_BOOTSTRAP_ADDR on a
// free loopback port, a random GOSHMEM_BOOTSTRAP_TOKEN), no launcher.
func tcpJob(t *testing.T, np int, limit time.Duration, env []string, args ...string) result {
	t.Helper()
	e := append([]string{"NP=" + fmt.Sprint(np), "RANKVAR=GOSHMEM_RANK", "GOSHMEM_NPES=" + fmt.Sprint(np),
		"GOSHMEM_BOOTSTRAP_ADDR=" + freePort(t), "GOSHMEM_BOOTSTRAP_TOKEN=" + token(t), "GOSHMEM_BOOTSTRAP_TIMEOUT=30s"}, env...)
	return launch{np: 0, env: e, args: args, wrap: []string{"sh", "-c", loopScript, "sh"}}.run(t, limit)
}

// TestTCPSPMD runs every check with 4 PEs started by a shell loop.
func TestTCPSPMD(t *testing.T) {
	needBuild(t)
	r := tcpJob(t, 4, suiteLimit, nil, "-v")
	m := summaryRE.FindStringSubmatch(r.out)
	require.True(t, r.code == 0 && m != nil && m[3] == "0", "exit %d after %v; output:\n%s", r.code, r.wall.Round(time.Millisecond), r.out)
	assert.Equal(t, "4", m[1], "PE count in the summary")
	assert.NotEqual(t, "0", m[2], "no check ran")
	t.Logf("tcp, 4 PEs from a shell loop: %s (%v)", strings.TrimPrefix(m[0], "spmd: "), r.wall.Round(time.Millisecond))
}

// TestTCPInfo: GOSHMEM_INFO says which bootstrap runs and why, and the
// PEs of one machine reach each other over shm (one node, as under MPI).
func TestTCPInfo(t *testing.T) {
	needBuild(t)
	r := tcpJob(t, 2, 60*time.Second, []string{"GOSHMEM_INFO=1"}, "-run", "^rma/ctx$")
	require.Equal(t, 0, r.code, "output:\n%s", r.out)
	assert.Contains(t, r.out, "goshmem: info: 2 PEs, bootstrap tcp,")
	assert.Contains(t, r.out, "goshmem: info: bootstrap tcp: GOSHMEM_BOOTSTRAP=auto, no MPI launcher, and GOSHMEM_RANK is set")
	assert.Regexp(t, `bootstrap tcp: rank and size from GOSHMEM_RANK/GOSHMEM_NPES, address from GOSHMEM_BOOTSTRAP_ADDR; rendezvous 127\.0\.0\.1:\d+ \(served by this process\), authenticated by GOSHMEM_BOOTSTRAP_TOKEN`, r.out)
	assert.Contains(t, r.out, "GOSHMEM_BOOTSTRAP_TOKEN  = (set)", "the token is never printed")
	for pe := 0; pe < 2; pe++ {
		assert.Regexp(t, fmt.Sprintf(`goshmem: info: PE %d \(node 0\): transport shm`, pe), r.out)
	}
}

// TestTCPTorchrunStyle: rank and size from torchrun's variables, the
// rendezvous at MASTER_ADDR:MASTER_PORT, GOSHMEM_BOOTSTRAP unset.
func TestTCPTorchrunStyle(t *testing.T) {
	needBuild(t)
	host, port, err := net.SplitHostPort(freePort(t))
	require.NoError(t, err)
	env := []string{"NP=3", "RANKVAR=RANK", "WORLD_SIZE=3", "LOCAL_WORLD_SIZE=3", "MASTER_ADDR=" + host, "MASTER_PORT=" + port,
		"GOSHMEM_BOOTSTRAP_TOKEN=" + token(t), "GOSHMEM_INFO=1"}
	r := launch{env: env, args: []string{"-run", "^(rma/put-get/int64|coll/)"}, wrap: []string{"sh", "-c", loopScript, "sh"}}.run(t, 90*time.Second)
	require.Equal(t, 0, r.code, "output:\n%s", r.out)
	assert.Regexp(t, `spmd: np 3: \d+ passed, 0 failed`, r.out)
	assert.Contains(t, r.out, "bootstrap tcp: GOSHMEM_BOOTSTRAP=auto, no MPI launcher, and RANK and MASTER_ADDR are set")
	assert.Contains(t, r.out, "rank and size from RANK/WORLD_SIZE (torchrun), address from MASTER_ADDR:MASTER_PORT")
}

// TestTCPBadInput: wrong launches fail on every PE with a message that
// says what is wrong, and the job ends by itself.
func TestTCPBadInput(t *testing.T) {
	needBuild(t)
	tests := []struct {
		name  string
		ranks string // rank per process
		size  string // GOSHMEM_NPES per process
		want  string
		count int // processes that must report it
	}{
		{"duplicate rank", "0 1 1", "3 3 3", "two PEs have rank 1", 3},
		{"rank outside", "0 1 5", "3 3 3", "has rank 5, outside [0, 3)", 3},
		{"sizes disagree", "0 1 2", "3 3 4", "PEs disagree on the job size", 3},
		{"missing PE", "0 1", "3 3", "PEs [2] did not join", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			script := `set -- $RANKS; ranks="$*"; set -- $SIZES; sizes="$*"; pids=; i=1
for r in $ranks; do s=$(echo $sizes | cut -d' ' -f$i); GOSHMEM_RANK=$r GOSHMEM_NPES=$s "$PROG" -mode initfin & pids="$pids $!"; i=$((i + 1)); done
rc=0; for p in $pids; do wait $p || rc=$?; done; exit $rc`
			env := []string{"RANKS=" + tc.ranks, "SIZES=" + tc.size, "PROG=" + spmdBin,
				"GOSHMEM_BOOTSTRAP_ADDR=" + freePort(t), "GOSHMEM_BOOTSTRAP_TOKEN=" + token(t), "GOSHMEM_BOOTSTRAP_TIMEOUT=3s"}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "sh", "-c", script)
			cmd.Env = append(os.Environ(), env...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			out, err := cmd.CombinedOutput()
			require.NoError(t, ctx.Err(), "still running at the deadline; output:\n%s", out)
			require.Error(t, err, "output:\n%s", out)
			n := 0
			for _, l := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(l, "spmd: Init: ") && strings.Contains(l, tc.want) {
					n++
				}
			}
			assert.Equal(t, tc.count, n, "every PE's Init fails saying %q; output:\n%s", tc.want, out)
		})
	}
}

// TestTCPForeignConnection: a process that connects to the rendezvous
// without the job's token is refused and reported; the job completes.
func TestTCPForeignConnection(t *testing.T) {
	needBuild(t)
	addr := freePort(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	// Knocks every millisecond until the job is over: PE 0 listens only
	// while the job's PEs join, a short window without a launcher.
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				continue
			}
			_, _ = c.Write([]byte("GET / HTTP/1.0\r\n\r\n" + strings.Repeat("x", 80)))
			_ = c.Close()
		}
	}()
	e := []string{"NP=2", "RANKVAR=GOSHMEM_RANK", "GOSHMEM_NPES=2", "GOSHMEM_BOOTSTRAP_ADDR=" + addr, "GOSHMEM_BOOTSTRAP_TOKEN=" + token(t)}
	r := launch{env: e, args: []string{"-run", "^rma/put-get/int64$"}, wrap: []string{"sh", "-c", loopScript, "sh"}}.run(t, 60*time.Second)
	close(stop)
	wg.Wait()
	require.Equal(t, 0, r.code, "output:\n%s", r.out)
	assert.Regexp(t, `spmd: np 2: \d+ passed, 0 failed`, r.out)
	assert.Regexp(t, `goshmem: bootstrap tcp: refused a connection from 127\.0\.0\.1:\d+: not goshmem's bootstrap protocol`, r.out)

	// A PE of "another job" (a different token) is refused, fails, and the
	// job it tried to join still completes.
	addr = freePort(t)
	tok := token(t)
	script := `GOSHMEM_RANK=0 GOSHMEM_BOOTSTRAP_TOKEN=$TOK "$PROG" -run '^rma/put-get/int64$' & a=$!
GOSHMEM_RANK=1 GOSHMEM_BOOTSTRAP_TOKEN=wrong "$PROG" -run '^rma/put-get/int64$'; echo "wrong-token PE exit $?"
GOSHMEM_RANK=1 GOSHMEM_BOOTSTRAP_TOKEN=$TOK "$PROG" -run '^rma/put-get/int64$' & b=$!
wait $a && wait $b`
	r = launch{env: []string{"TOK=" + tok, "PROG=" + spmdBin, "GOSHMEM_NPES=2", "GOSHMEM_BOOTSTRAP_ADDR=" + addr},
		wrap: []string{"sh", "-c", script, "sh"}}.run(t, 60*time.Second)
	require.Equal(t, 0, r.code, "output:\n%s", r.out)
	assert.Contains(t, r.out, "wrong-token PE exit 1")
	assert.Contains(t, r.out, "refused this PE: its proof of the job's secret is wrong")
	assert.Regexp(t, `spmd: np 2: \d+ passed, 0 failed`, r.out)
}

// TestTCPFault: PE 1 exits without Finalize while the others wait for it;
// with no launcher to end them, goshmem must: the job ends by itself,
// non-zero, naming PE 1.
func TestTCPFault(t *testing.T) {
	needBuild(t)
	gosh := regexp.MustCompile(`PE 1\b`)
	for _, wait := range []string{"wait", "barrier"} {
		t.Run(wait, func(t *testing.T) {
			r := tcpJob(t, 3, 60*time.Second, []string{"GOSHMEM_TIMEOUT=10s"}, "-mode", "fault-exit", "-fault-wait", wait)
			t.Logf("exit %d after %v; output:\n%s", r.code, r.wall.Round(time.Millisecond), r.out)
			assert.NotEqual(t, 0, r.code)
			assert.Contains(t, r.out, "spmd: PE 1: injecting fault-exit")
			assert.Regexp(t, gosh, strings.ReplaceAll(r.out, "spmd: PE 1: injecting fault-exit", ""))
		})
	}
}

// uidJob starts npes uidpe processes. With fromTest the test process makes
// the ID (it serves the rendezvous and is no PE); otherwise PE 0 makes it
// and prints it, and the test hands the text to the others.
func uidJob(t *testing.T, npes int, fromTest bool, extra ...string) ([]string, []int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var text string
	if fromTest {
		text = newUniqueIDText(t)
	}
	outs := make([]string, npes)
	codes := make([]int, npes)
	var wg sync.WaitGroup
	startPE := func(rank int, args []string, idc chan<- string) {
		cmd := exec.CommandContext(ctx, uidpeBin, append([]string{"-rank", fmt.Sprint(rank), "-npes", fmt.Sprint(npes)}, args...)...)
		cmd.Env = append(os.Environ(), "GOSHMEM_BOOTSTRAP_TIMEOUT=20s", "GOSHMEM_BOOTSTRAP_ADDR=127.0.0.1:0")
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b strings.Builder
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				line := sc.Text()
				b.WriteString(line + "\n")
				if id, ok := strings.CutPrefix(line, "uidpe: id "); ok && idc != nil {
					idc <- id
				}
			}
			err := cmd.Wait()
			if ee, ok := err.(*exec.ExitError); ok {
				codes[rank] = ee.ExitCode()
			} else if err != nil {
				codes[rank] = -1
			}
			outs[rank] = b.String() + stderr.String()
			if idc != nil {
				close(idc)
			}
		}()
	}
	first := 0
	if !fromTest {
		idc := make(chan string, 1)
		startPE(0, append([]string{"-make-id"}, extra...), idc)
		text = <-idc
		require.NotEmpty(t, text, "PE 0 printed no ID")
		first = 1
	}
	for r := first; r < npes; r++ {
		startPE(r, append([]string{"-id", text}, extra...), nil)
	}
	wg.Wait()
	require.NoError(t, ctx.Err(), "still running at the deadline: %v", outs)
	return outs, codes
}

// TestUniqueID: PEs started by this test join through the unique-ID API,
// the ID made by the test itself or by one of the PEs.
func TestUniqueID(t *testing.T) {
	needBuild(t)
	for _, fromTest := range []bool{true, false} {
		t.Run(fmt.Sprintf("made-by-test=%v", fromTest), func(t *testing.T) {
			outs, codes := uidJob(t, 3, fromTest)
			for r := range 3 {
				assert.Equal(t, 0, codes[r], "PE %d output:\n%s", r, outs[r])
				assert.Contains(t, outs[r], fmt.Sprintf("uidpe: PE %d of 3: ok", r))
			}
		})
	}
	t.Run("abort", func(t *testing.T) {
		outs, codes := uidJob(t, 3, false, "-abort")
		for r := range 3 {
			assert.Equal(t, 5, codes[r], "PE %d exit status; output:\n%s", r, outs[r])
		}
		assert.Contains(t, outs[1], "uidpe: PE 1 aborts the job")
		assert.Contains(t, outs[0], "the job was aborted by PE 1 (exit status 5)")
		assert.Contains(t, outs[2], "the job was aborted by PE 1 (exit status 5)")
	})
}

// newUniqueIDText makes a unique ID in the test process (which then serves
// the rendezvous while the PEs run) and returns its text.
func newUniqueIDText(t *testing.T) string {
	t.Helper()
	id, err := shmem.NewUniqueID(shmem.WithListenAddr("127.0.0.1:0"))
	require.NoError(t, err)
	text, err := id.MarshalText()
	require.NoError(t, err)
	return string(text)
}
