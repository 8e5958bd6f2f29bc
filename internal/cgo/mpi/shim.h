/*
 * shim.h: goshmem's dlopen loader for an MPI library and the thin C
 * wrappers that Go calls through cgo (cgo cannot call a C function pointer
 * directly). Every wrapper acts on MPI_COMM_WORLD and passes the handles
 * of the ABI that goshmemi_mpi_select chose (abi.h).
 */
#ifndef GOSHMEMI_MPI_SHIM_H
#define GOSHMEMI_MPI_SHIM_H

#include <stddef.h>

#include "abi.h"

/* A wrapper called before goshmemi_mpi_select succeeded (never an MPI
 * error code: those are small positive ints). */
#define GOSHMEMI_MPI_NOT_LOADED 0x20000000

/* goshmemi_mpi_open dlopens lib (RTLD_NOW | RTLD_GLOBAL: Open MPI dlopens
 * its own components, which need libmpi's symbols) and resolves every MPI_*
 * function. Returns 0, or 1 when dlopen failed, 2 when a function is
 * missing; err receives dlerror's text or the missing symbol's name.
 * Nothing can be called until goshmemi_mpi_select. */
int goshmemi_mpi_open(const char *lib, char *err, size_t errlen);
/* goshmemi_mpi_has_symbol reports whether the opened library exports name. */
int goshmemi_mpi_has_symbol(const char *name);
/* goshmemi_mpi_select fixes the ABI (GOSHMEMI_MPI_OMPI or _MPICH) and its
 * predefined handles. Returns 0, or 2 with the missing global's name. */
int goshmemi_mpi_select(int impl, char *err, size_t errlen);
/* goshmemi_mpi_impl is the ABI chosen, GOSHMEMI_MPI_NONE before. */
int goshmemi_mpi_impl(void);
/* goshmemi_mpi_close forgets everything and dlcloses the library. */
void goshmemi_mpi_close(void);

/* Callable once opened (before select): no handles involved. */
int goshmemi_mpi_library_version(char *buf, int *len);
int goshmemi_mpi_initialized(int *flag);
int goshmemi_mpi_finalized(int *flag);
int goshmemi_mpi_error_string(int code, char *buf, int *len);

/* Callable once selected. */
int goshmemi_mpi_init_thread(int required, int *provided);
int goshmemi_mpi_finalize(void);
int goshmemi_mpi_rank(int *rank);
int goshmemi_mpi_size(int *size);
int goshmemi_mpi_barrier(void);
int goshmemi_mpi_allgather(const void *in, int n, void *out);
int goshmemi_mpi_bcast(void *buf, int n, int root);
int goshmemi_mpi_abort(int code);
int goshmemi_mpi_node_leaders(int *leaders);

#endif
