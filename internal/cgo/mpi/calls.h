/*
 * calls.h: the MPI calls of bootstrap/mpi, written once and compiled once
 * per ABI. shim.c includes this file twice, with
 *   GOSHMEMI_P  the prefix of the ABI's function-pointer types and of the
 *               functions made here (goshmemi_ompi_ / goshmemi_mpich_)
 *   GOSHMEMI_H  the ABI's handle type
 *   GOSHMEMI_K  the struct of that ABI's predefined handles (world, byte,
 *               int_, op_min, info_null, errors_return, comm_type_shared)
 * so that every handle is passed with the type the library expects.
 */

#define GOSHMEMI_CAT_(a, b) a##b
#define GOSHMEMI_CAT(a, b) GOSHMEMI_CAT_(a, b)
/* F(name): a function of this ABI; FN(MPI name): its entry point, typed. */
#define F(name) GOSHMEMI_CAT(GOSHMEMI_P, name)
#define FN(name) ((GOSHMEMI_CAT(GOSHMEMI_P, GOSHMEMI_CAT(name, _fn)))mpi_fn.name)

static int F(init_thread)(int required, int *provided)
{
	int rc = ((goshmemi_MPI_Init_thread_fn)mpi_fn.Init_thread)(NULL, NULL, required, provided);
	if (rc != GOSHMEMI_MPI_SUCCESS)
		return rc;
	return FN(Comm_set_errhandler)(GOSHMEMI_K.world, GOSHMEMI_K.errors_return);
}

static int F(rank)(int *rank) { return FN(Comm_rank)(GOSHMEMI_K.world, rank); }
static int F(size)(int *size) { return FN(Comm_size)(GOSHMEMI_K.world, size); }
static int F(barrier)(void) { return FN(Barrier)(GOSHMEMI_K.world); }

static int F(allgather)(const void *in, int n, void *out)
{
	return FN(Allgather)(in, n, GOSHMEMI_K.byte, out, n, GOSHMEMI_K.byte, GOSHMEMI_K.world);
}

static int F(bcast)(void *buf, int n, int root)
{
	return FN(Bcast)(buf, n, GOSHMEMI_K.byte, root, GOSHMEMI_K.world);
}

static int F(abort)(int code) { return FN(Abort)(GOSHMEMI_K.world, code); }

/* node_leaders stores in leaders[r], for every world rank r, the lowest
 * world rank on r's shared-memory node (MPI_COMM_TYPE_SHARED). leaders must
 * hold MPI_Comm_size(MPI_COMM_WORLD) ints. */
static int F(node_leaders)(int *leaders)
{
	int rc, frc, wrank, leader;
	GOSHMEMI_H node;

	rc = FN(Comm_rank)(GOSHMEMI_K.world, &wrank);
	if (rc != GOSHMEMI_MPI_SUCCESS)
		return rc;
	rc = FN(Comm_split_type)(GOSHMEMI_K.world, GOSHMEMI_K.comm_type_shared, 0, GOSHMEMI_K.info_null, &node);
	if (rc != GOSHMEMI_MPI_SUCCESS)
		return rc;
	FN(Comm_set_errhandler)(node, GOSHMEMI_K.errors_return);
	rc = FN(Allreduce)(&wrank, &leader, 1, GOSHMEMI_K.int_, GOSHMEMI_K.op_min, node);
	if (rc == GOSHMEMI_MPI_SUCCESS)
		rc = FN(Allgather)(&leader, 1, GOSHMEMI_K.int_, leaders, 1, GOSHMEMI_K.int_, GOSHMEMI_K.world);
	frc = FN(Comm_free)(&node);
	return rc != GOSHMEMI_MPI_SUCCESS ? rc : frc;
}

#undef F
#undef FN
