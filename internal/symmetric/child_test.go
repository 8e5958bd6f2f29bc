//go:build linux

package symmetric

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// childRoleEnv selects the role a re-executed test binary plays
// (runChild); its arguments travel in childArgEnv, space-separated.
const (
	childRoleEnv = "GOSHMEM_SYMTEST_ROLE"
	childArgEnv  = "GOSHMEM_SYMTEST_ARGS"
)

// runChild plays role and returns the exit code:
//
//	peer-write <handle hex> <size> <off> <byte>: OpenHandle, store byte at
//	    off, print the byte found at off+1, exit.
//	owner <size> <off> <byte>: CreateAnon, store byte at off, touch every
//	    page, print "handle <hex>", then wait for stdin to close and print
//	    the byte at off+1 (what a peer stored) before exiting.
func runChild(role string) int {
	args := strings.Fields(os.Getenv(childArgEnv))
	num := func(i int) uint64 {
		v, err := strconv.ParseUint(args[i], 0, 64)
		if err != nil {
			panic(fmt.Sprintf("child %s: argument %d %q: %v", role, i, args[i], err))
		}
		return v
	}
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "child %s: %+v\n", role, err)
		return 2
	}
	switch role {
	case "peer-write":
		b, err := hex.DecodeString(args[0])
		if err != nil {
			return fail(err)
		}
		h, err := ParseRegionHandle(b)
		if err != nil {
			return fail(err)
		}
		r, err := OpenHandle(h, num(1))
		if err != nil {
			return fail(err)
		}
		mem := r.Bytes()
		mem[num(2)] = byte(num(3))
		fmt.Printf("%d\n", mem[num(2)+1])
		if err := r.Close(); err != nil {
			return fail(err)
		}
		return 0
	case "owner":
		r, err := CreateAnon(num(0))
		if err != nil {
			return fail(err)
		}
		mem := r.Bytes()
		for i := 0; i < len(mem); i += os.Getpagesize() {
			mem[i] = 0xee
		}
		mem[num(1)] = byte(num(2))
		fmt.Printf("handle %s\n", hex.EncodeToString(r.Handle().Marshal()))
		_, _ = io.Copy(io.Discard, os.Stdin)
		fmt.Printf("%d\n", mem[num(1)+1])
		if err := r.Close(); err != nil {
			return fail(err)
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
	return 2
}

// childCmd returns a command that re-executes this test binary in role.
func childCmd(t *testing.T, role string, args ...any) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = fmt.Sprint(a)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childRoleEnv+"="+role, childArgEnv+"="+strings.Join(strs, " "))
	cmd.Stderr = &testWriter{t: t, prefix: role + ": "}
	return cmd
}

// owner is a running "owner" child.
type owner struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	handle RegionHandle
}

// startOwner starts an "owner" child and reads its handle.
func startOwner(t *testing.T, size, off uint64, val byte) *owner {
	t.Helper()
	cmd := childCmd(t, "owner", size, off, val)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	o := &owner{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		if o.cmd.ProcessState == nil {
			_ = o.cmd.Process.Kill()
			_ = o.cmd.Wait()
		}
	})
	line, err := o.out.ReadString('\n')
	require.NoError(t, err, "owner child's first line")
	hexHandle, ok := strings.CutPrefix(strings.TrimSpace(line), "handle ")
	require.True(t, ok, "owner child printed %q", line)
	b, err := hex.DecodeString(hexHandle)
	require.NoError(t, err)
	o.handle, err = ParseRegionHandle(b)
	require.NoError(t, err)
	require.Equal(t, cmd.Process.Pid, o.handle.PID)
	return o
}

// finish closes the owner's stdin and returns the byte it printed.
func (o *owner) finish(t *testing.T) byte {
	t.Helper()
	require.NoError(t, o.stdin.Close())
	line, err := o.out.ReadString('\n')
	require.NoError(t, err)
	require.NoError(t, o.cmd.Wait())
	v, err := strconv.ParseUint(strings.TrimSpace(line), 10, 8)
	require.NoError(t, err)
	return byte(v)
}

// kill SIGKILLs the owner and reaps it.
func (o *owner) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, o.cmd.Process.Kill())
	err := o.cmd.Wait()
	require.Error(t, err, "a killed child exits with an error")
}

// testWriter forwards a child's stderr to the test log.
type testWriter struct {
	t      *testing.T
	prefix string
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s%s", w.prefix, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
