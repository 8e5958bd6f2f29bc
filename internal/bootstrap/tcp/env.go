package tcpboot

import (
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/errs"
)

// rankSources are where FromEnv looks for rank and size, in order: the
// first source with either variable set is used, and must have both.
var rankSources = []struct {
	rank, size, localRank, localSize, name string
}{
	{"GOSHMEM_RANK", "GOSHMEM_NPES", "", "", "GOSHMEM_RANK/GOSHMEM_NPES"},
	{"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "RANK/WORLD_SIZE (torchrun)"},
	{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "", "SLURM_PROCID/SLURM_NTASKS (Slurm)"},
}

func lookupNonEmpty(lookup func(string) (string, bool), name string) (string, bool) {
	if name == "" {
		return "", false
	}
	v, ok := lookup(name)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

// Configured reports whether the environment asks for the tcp bootstrap
// (GOSHMEM_BOOTSTRAP=auto picks it then), and why: GOSHMEM_RANK,
// GOSHMEM_NPES or GOSHMEM_BOOTSTRAP_ADDR is set, or a launcher's rank
// (RANK, SLURM_PROCID) comes with MASTER_ADDR. A bare SLURM_PROCID (any
// srun step) is not enough: without an address there is no rendezvous.
func Configured(lookup func(string) (string, bool)) (bool, string) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	for _, v := range []string{"GOSHMEM_RANK", "GOSHMEM_NPES", "GOSHMEM_BOOTSTRAP_ADDR"} {
		if _, ok := lookupNonEmpty(lookup, v); ok {
			return true, v + " is set"
		}
	}
	if _, ok := lookupNonEmpty(lookup, "MASTER_ADDR"); ok {
		for _, v := range []string{"RANK", "SLURM_PROCID"} {
			if _, ok := lookupNonEmpty(lookup, v); ok {
				return true, v + " and MASTER_ADDR are set"
			}
		}
	}
	return false, ""
}

// FromEnv reads one PE's Config from the environment (lookup is
// os.LookupEnv when nil): rank and size from GOSHMEM_RANK/GOSHMEM_NPES,
// else RANK/WORLD_SIZE (with LOCAL_RANK/LOCAL_WORLD_SIZE), else
// SLURM_PROCID/SLURM_NTASKS (SLURM_LOCALID); the rendezvous from
// GOSHMEM_BOOTSTRAP_ADDR, else MASTER_ADDR:MASTER_PORT; the secret from
// GOSHMEM_BOOTSTRAP_TOKEN; the timeout from GOSHMEM_BOOTSTRAP_TIMEOUT.
// PE 0 serves the rendezvous.
func FromEnv(lookup func(string) (string, bool)) (Config, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	op := "bootstrap tcp"
	cfg := Config{Rank: -1, LocalRank: -1, LocalSize: -1, Timeout: DefaultTimeout}
	found := false
	for _, src := range rankSources {
		rv, rok := lookupNonEmpty(lookup, src.rank)
		sv, sok := lookupNonEmpty(lookup, src.size)
		if !rok && !sok {
			continue
		}
		if !rok || !sok {
			set, missing := src.size, src.rank
			if rok {
				set, missing = src.rank, src.size
			}
			return cfg, errs.Hint(errs.ErrInvalidArgument, "set rank and size together",
				-1, op, "%s is set but %s is not", set, missing)
		}
		var err error
		if cfg.Rank, err = strconv.Atoi(rv); err != nil {
			return cfg, errs.New(errs.ErrInvalidArgument, -1, op, "%s=%q is not an integer rank", src.rank, rv)
		}
		if cfg.Size, err = strconv.Atoi(sv); err != nil || cfg.Size < 1 {
			return cfg, errs.New(errs.ErrInvalidArgument, cfg.Rank, op, "%s=%q is not a job size (an integer >= 1)", src.size, sv)
		}
		if v, ok := lookupNonEmpty(lookup, src.localRank); ok {
			if n, err := strconv.Atoi(v); err == nil {
				cfg.LocalRank = n
			}
		}
		if v, ok := lookupNonEmpty(lookup, src.localSize); ok {
			if n, err := strconv.Atoi(v); err == nil && cfg.LocalRank >= 0 {
				cfg.LocalSize = n
			}
		}
		cfg.Source = src.name
		found = true
		break
	}
	if !found {
		return cfg, errs.Hint(errs.ErrInvalidArgument,
			"a launcher-free job gives every process GOSHMEM_RANK and GOSHMEM_NPES (or torchrun's RANK/WORLD_SIZE, Slurm's SLURM_PROCID/SLURM_NTASKS)",
			-1, op, "no rank and size in the environment")
	}
	addrSrc := "GOSHMEM_BOOTSTRAP_ADDR"
	if a, ok := lookupNonEmpty(lookup, "GOSHMEM_BOOTSTRAP_ADDR"); ok {
		cfg.Addr = a
	} else {
		h, hok := lookupNonEmpty(lookup, "MASTER_ADDR")
		p, pok := lookupNonEmpty(lookup, "MASTER_PORT")
		if !hok || !pok {
			return cfg, errs.Hint(errs.ErrInvalidArgument,
				"set GOSHMEM_BOOTSTRAP_ADDR=host:port (an address of PE 0's machine, the same on every PE)",
				cfg.Rank, op, "no rendezvous address: neither GOSHMEM_BOOTSTRAP_ADDR nor both MASTER_ADDR and MASTER_PORT are set")
		}
		cfg.Addr = net.JoinHostPort(h, p)
		addrSrc = "MASTER_ADDR:MASTER_PORT"
	}
	if err := checkAddr(cfg.Addr, false); err != nil {
		return cfg, errs.Wrap(err, cfg.Rank, op, "%s", addrSrc)
	}
	cfg.Source += ", address from " + addrSrc
	if t, ok := lookupNonEmpty(lookup, "GOSHMEM_BOOTSTRAP_TOKEN"); ok {
		cfg.Key = []byte(t)
	}
	if v, ok := lookupNonEmpty(lookup, "GOSHMEM_BOOTSTRAP_TIMEOUT"); ok {
		d, err := parseTimeout(v)
		if err != nil {
			return cfg, errs.Wrap(err, cfg.Rank, op, "GOSHMEM_BOOTSTRAP_TIMEOUT")
		}
		cfg.Timeout = d
	}
	cfg.Serve = cfg.Rank == 0
	return cfg, nil
}

// checkAddr accepts host:port with a numeric port (port 0 only when
// ephemeral is allowed: a listener that reports the port it got).
func checkAddr(addr string, ephemeral bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errs.New(errs.ErrInvalidArgument, -1, "", "%q is not host:port (%v)", addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || (p == 0 && !ephemeral) {
		want := "1-65535"
		if ephemeral {
			want = "0-65535"
		}
		return errs.New(errs.ErrInvalidArgument, -1, "", "%q: port %q is not a number in %s", addr, port, want)
	}
	if host == "" {
		return errs.New(errs.ErrInvalidArgument, -1, "", "%q has no host: name the address to listen at and connect to", addr)
	}
	return nil
}

// NodeKey is this process's node identity: PEs with equal keys can map
// each other's memory (/dev/shm, memfd through /proc/<pid>/fd). It joins
// the hostname (what MPI's shared-memory split goes by, and what a UTS
// namespace per emulated node changes), the kernel's boot id (two
// containers may share a hostname across machines) and the mount and PID
// namespaces (a process in another one sees neither the same /dev/shm
// nor the same /proc).
func NodeKey() string {
	host, _ := os.Hostname()
	parts := []string{host}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		parts = append(parts, strings.TrimSpace(string(b)))
	}
	for _, ns := range []string{"mnt", "pid"} {
		if l, err := os.Readlink("/proc/self/ns/" + ns); err == nil {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "|")
}

// parseTimeout reads GOSHMEM_BOOTSTRAP_TIMEOUT: a positive duration.
func parseTimeout(v string) (time.Duration, error) {
	d, err := env.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, errs.New(errs.ErrInvalidArgument, -1, "", "%q is not a positive duration (e.g. 60s, or seconds as a number)", v)
	}
	return d, nil
}
