package runtime

import (
	"fmt"
	"log/slog"

	"github.com/goshmem/goshmem/internal/bootstrap"
	mpiboot "github.com/goshmem/goshmem/internal/bootstrap/mpi"
	tcpboot "github.com/goshmem/goshmem/internal/bootstrap/tcp"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/logx"
)

// newTCPBootstrap starts the tcp bootstrap from the environment
// (tcpboot.FromEnv); why is what GOSHMEM_INFO says about the choice.
func newTCPBootstrap(why string) (bootstrap.Bootstrap, error) {
	cfg, err := tcpboot.FromEnv(nil)
	if err != nil {
		return nil, errs.Wrap(err, cfg.Rank, "Init", "%s", why)
	}
	cfg.Why = why
	b, err := tcpboot.New(cfg)
	if err != nil {
		return nil, errs.Wrap(err, cfg.Rank, "Init", "")
	}
	return b, nil
}

// NewUniqueIDBootstrap joins the job of a unique ID (shmem.WithUniqueID).
func NewUniqueIDBootstrap(id tcpboot.UniqueID, rank, npes int) (bootstrap.Bootstrap, error) {
	cfg, err := tcpboot.UIDConfig(id, rank, npes)
	if err != nil {
		return nil, err
	}
	cfg.Why = "shmem.WithUniqueID"
	b, err := tcpboot.New(cfg)
	if err != nil {
		return nil, errs.Wrap(err, rank, "Init", "")
	}
	return b, nil
}

// bootInfo writes GOSHMEM_INFO's lines on the bootstrap: which one runs
// and why (setting is GOSHMEM_BOOTSTRAP's value).
func bootInfo(lg *logx.Logger, pe int, b bootstrap.Bootstrap, setting string) {
	attrs := []slog.Attr{logx.PE(pe), slog.String("backend", "bootstrap"), slog.String("bootstrap", b.Name())}
	if d, ok := b.(interface{ Info() []string }); ok {
		for _, l := range d.Info() {
			lg.Info("goshmem: info: "+l+"\n", l, attrs...)
		}
		return
	}
	var why string
	switch {
	case b.Name() == "mpi" && setting == "mpi":
		why = "GOSHMEM_BOOTSTRAP=mpi"
	case b.Name() == "mpi":
		why = "GOSHMEM_BOOTSTRAP=auto under an MPI launcher"
	case setting == "single":
		why = "GOSHMEM_BOOTSTRAP=single: a 1-PE job"
	case mpiboot.UnderLauncher():
		why = "chosen by the program (shmem.WithBootstrap)"
	default:
		why = "GOSHMEM_BOOTSTRAP=auto, no MPI launcher and no tcp variables (GOSHMEM_RANK, GOSHMEM_BOOTSTRAP_ADDR, RANK or SLURM_PROCID with MASTER_ADDR): a 1-PE job"
	}
	if b.Name() == "mpi" {
		why += "; " + mpiboot.Library()
	}
	msg := fmt.Sprintf("bootstrap %s: %s", b.Name(), why)
	lg.Info("goshmem: info: "+msg+"\n", msg, attrs...)
}
