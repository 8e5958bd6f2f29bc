/*
 * fakempi.c: a library that exports every MPI function goshmem resolves but
 * is neither Open MPI nor of the MPICH ABI: its MPI_Get_library_version
 * says "FakeMPI 0.1". The loader must refuse it, naming that text.
 * Built by mpi_test.go: gcc -shared -fPIC -o libfakempi.so fakempi.c
 */
#include <string.h>

#define STUB(name) \
	int name(void) { return 0; }
STUB(MPI_Init_thread)
STUB(MPI_Initialized)
STUB(MPI_Finalized)
STUB(MPI_Finalize)
STUB(MPI_Error_string)
STUB(MPI_Comm_rank)
STUB(MPI_Comm_size)
STUB(MPI_Barrier)
STUB(MPI_Allgather)
STUB(MPI_Allreduce)
STUB(MPI_Bcast)
STUB(MPI_Abort)
STUB(MPI_Comm_split_type)
STUB(MPI_Comm_free)
STUB(MPI_Comm_set_errhandler)

int MPI_Get_library_version(char *s, int *len)
{
	static const char v[] = "FakeMPI 0.1\nnot a real MPI";
	memcpy(s, v, sizeof v);
	*len = (int)sizeof v - 1;
	return 0;
}
