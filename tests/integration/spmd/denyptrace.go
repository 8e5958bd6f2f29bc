package main

import (
	"flag"
	"fmt"
	goruntime "runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

var denyPtraceFlag = flag.Bool("deny-ptrace", false,
	"before Init, install a seccomp filter that fails ptrace, pidfd_getfd, process_vm_readv and process_vm_writev with EPERM, "+
		"as container runtimes' default profiles do without CAP_SYS_PTRACE (and as Yama's ptrace_scope 1 does between a job's PEs)")

// denyPtrace installs that filter on every thread of the process and
// checks that pidfd_getfd now fails.
func denyPtrace() error {
	var arch uint32
	switch goruntime.GOARCH {
	case "amd64":
		arch = 0xc000003e // AUDIT_ARCH_X86_64
	case "arm64":
		arch = 0xc00000b7 // AUDIT_ARCH_AARCH64
	default:
		return fmt.Errorf("-deny-ptrace: no seccomp arch for %s", goruntime.GOARCH)
	}
	const (
		retAllow = 0x7fff0000
		retErrno = 0x00050000
	)
	deny := []uint32{unix.SYS_PTRACE, unix.SYS_PIDFD_GETFD, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV}
	n := uint8(len(deny))
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}, // seccomp_data.arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: arch, Jt: 1, Jf: 0},
		{Code: unix.BPF_RET | unix.BPF_K, K: retAllow},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
	}
	for i, nr := range deny {
		// on a match, jump over the rest of the list and the allow
		prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: nr, Jt: n - uint8(i), Jf: 0})
	}
	prog = append(prog,
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: retAllow},
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: retErrno | uint32(unix.EPERM)})
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("-deny-ptrace: PR_SET_NO_NEW_PRIVS: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fp))); e != 0 {
		return fmt.Errorf("-deny-ptrace: seccomp: %w", e)
	}
	goruntime.KeepAlive(prog)
	pfd, err := unix.PidfdOpen(unix.Getpid(), 0)
	if err != nil {
		return fmt.Errorf("-deny-ptrace: pidfd_open: %w", err)
	}
	defer unix.Close(pfd)
	if fd, err := unix.PidfdGetfd(pfd, 0, 0); err != unix.EPERM {
		if err == nil {
			unix.Close(fd)
		}
		return fmt.Errorf("-deny-ptrace: pidfd_getfd after the filter: %v, want EPERM", err)
	}
	return nil
}
