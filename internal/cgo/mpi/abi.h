/*
 * abi.h: the two MPI ABIs goshmem speaks, declared here so that building
 * goshmem needs no mpi.h. Only what bootstrap/mpi calls is declared.
 *
 * The MPI functions are plain C functions with the same names in both
 * implementations; what differs is the type of a handle (MPI_Comm,
 * MPI_Datatype, MPI_Op, MPI_Info, MPI_Errhandler) and the values of the
 * predefined ones:
 *
 * - Open MPI (libmpi.so.40): a handle is a pointer, and a predefined handle
 *   is the address of an exported global (MPI_COMM_WORLD is
 *   &ompi_mpi_comm_world), found with dlsym.
 *   Ref: Open MPI 4.1 mpi.h, OMPI_PREDEFINED_GLOBAL and the MPI_COMM_WORLD,
 *   MPI_BYTE, MPI_INT, MPI_MIN, MPI_INFO_NULL, MPI_ERRORS_RETURN defines.
 * - MPICH and the MPICH-ABI family (libmpi.so.12 / libmpich.so.12: MPICH,
 *   Intel MPI, MVAPICH, Cray MPICH): a handle is an int, and a predefined
 *   handle is a fixed value.
 *   Ref: MPICH 4.0.2 mpi.h (Debian libmpich-dev 4.0.2-3), the values below;
 *   they are fixed by the MPICH ABI Compatibility Initiative.
 *
 * Constants that are plain ints: MPI_SUCCESS is 0 and the thread levels are
 * 0..3 in both (Open MPI: enum from MPI_THREAD_SINGLE; MPICH: #defines);
 * MPI_COMM_TYPE_SHARED is 0 in Open MPI (first of an enum) and 1 in MPICH.
 */
#ifndef GOSHMEMI_MPI_ABI_H
#define GOSHMEMI_MPI_ABI_H

#define GOSHMEMI_MPI_SUCCESS 0

/* Which ABI the loaded library speaks (goshmemi_mpi_impl). */
#define GOSHMEMI_MPI_NONE 0
#define GOSHMEMI_MPI_OMPI 1
#define GOSHMEMI_MPI_MPICH 2

/* Open MPI: every handle is a pointer to an opaque struct. */
typedef void *goshmemi_ompi_handle;
#define GOSHMEMI_OMPI_COMM_TYPE_SHARED 0

/* MPICH: every handle is an int. Ref: MPICH 4.0.2 mpi.h. */
typedef int goshmemi_mpich_handle;
#define GOSHMEMI_MPICH_COMM_WORLD 0x44000000     /* MPI_COMM_WORLD */
#define GOSHMEMI_MPICH_BYTE 0x4c00010d           /* MPI_BYTE */
#define GOSHMEMI_MPICH_INT 0x4c000405            /* MPI_INT */
#define GOSHMEMI_MPICH_OP_MIN 0x58000002         /* MPI_MIN */
#define GOSHMEMI_MPICH_INFO_NULL 0x1c000000      /* MPI_INFO_NULL */
#define GOSHMEMI_MPICH_ERRORS_RETURN 0x54000001  /* MPI_ERRORS_RETURN */
#define GOSHMEMI_MPICH_COMM_TYPE_SHARED 1        /* MPI_COMM_TYPE_SHARED */

/* The longest MPI_Error_string (Open MPI 256, MPICH 512) and
 * MPI_Get_library_version (Open MPI 256, MPICH 8192) texts, plus room. */
#define GOSHMEMI_MPI_MAX_ERROR_STRING 1024
#define GOSHMEMI_MPI_MAX_LIBRARY_VERSION_STRING 8200

/* Functions that take no handle: one signature for both ABIs.
 * Ref: MPI 3.1 §8.1.1: MPI_Get_library_version may be called before
 * MPI_Init (the loader uses it to tell the implementations apart). */
typedef int (*goshmemi_MPI_Init_thread_fn)(int *argc, char ***argv, int required, int *provided);
typedef int (*goshmemi_MPI_Initialized_fn)(int *flag);
typedef int (*goshmemi_MPI_Finalized_fn)(int *flag);
typedef int (*goshmemi_MPI_Finalize_fn)(void);
typedef int (*goshmemi_MPI_Error_string_fn)(int code, char *s, int *len);
typedef int (*goshmemi_MPI_Get_library_version_fn)(char *s, int *len);

/* Functions that take handles, once per ABI (H: the handle type). */
#define GOSHMEMI_MPI_HANDLE_FNS(P, H)                                                    \
	typedef int (*P##Comm_rank_fn)(H comm, int *rank);                                \
	typedef int (*P##Comm_size_fn)(H comm, int *size);                                \
	typedef int (*P##Barrier_fn)(H comm);                                             \
	typedef int (*P##Allgather_fn)(const void *sbuf, int scount, H stype, void *rbuf,  \
				       int rcount, H rtype, H comm);                      \
	typedef int (*P##Allreduce_fn)(const void *sbuf, void *rbuf, int count, H type,    \
				       H op, H comm);                                     \
	typedef int (*P##Bcast_fn)(void *buf, int count, H type, int root, H comm);       \
	typedef int (*P##Abort_fn)(H comm, int code);                                     \
	typedef int (*P##Comm_split_type_fn)(H comm, int split_type, int key, H info,     \
					     H *newcomm);                                 \
	typedef int (*P##Comm_free_fn)(H *comm);                                          \
	typedef int (*P##Comm_set_errhandler_fn)(H comm, H errhandler);

GOSHMEMI_MPI_HANDLE_FNS(goshmemi_ompi_, goshmemi_ompi_handle)
GOSHMEMI_MPI_HANDLE_FNS(goshmemi_mpich_, goshmemi_mpich_handle)

#endif
