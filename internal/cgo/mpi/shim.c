// shim.c: see shim.h. The only file of goshmem that calls into MPI.

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "shim.h"

/* Every MPI function goshmem calls, by its name without "MPI_". */
#define GOSHMEMI_MPI_SYMBOLS(X) \
	X(Init_thread)          \
	X(Initialized)          \
	X(Finalized)            \
	X(Finalize)             \
	X(Error_string)         \
	X(Get_library_version)  \
	X(Comm_rank)            \
	X(Comm_size)            \
	X(Barrier)              \
	X(Allgather)            \
	X(Allreduce)            \
	X(Bcast)                \
	X(Abort)                \
	X(Comm_split_type)      \
	X(Comm_free)            \
	X(Comm_set_errhandler)

static struct {
#define GOSHMEMI_FIELD(name) void *name;
	GOSHMEMI_MPI_SYMBOLS(GOSHMEMI_FIELD)
#undef GOSHMEMI_FIELD
} mpi_fn;

static void *mpi_lib;
static int mpi_impl = GOSHMEMI_MPI_NONE;

/* The predefined handles of each ABI (abi.h). */
#define GOSHMEMI_MPI_PREDEFINED(H) \
	struct {                   \
		H world;           \
		H byte;            \
		H int_;            \
		H op_min;          \
		H info_null;       \
		H errors_return;   \
		int comm_type_shared; \
	}
static GOSHMEMI_MPI_PREDEFINED(goshmemi_ompi_handle) ompi_k;
static const GOSHMEMI_MPI_PREDEFINED(goshmemi_mpich_handle) mpich_k = {
	GOSHMEMI_MPICH_COMM_WORLD, GOSHMEMI_MPICH_BYTE,      GOSHMEMI_MPICH_INT,
	GOSHMEMI_MPICH_OP_MIN,     GOSHMEMI_MPICH_INFO_NULL, GOSHMEMI_MPICH_ERRORS_RETURN,
	GOSHMEMI_MPICH_COMM_TYPE_SHARED,
};

#define GOSHMEMI_P goshmemi_ompi_
#define GOSHMEMI_H goshmemi_ompi_handle
#define GOSHMEMI_K ompi_k
#include "calls.h"
#undef GOSHMEMI_P
#undef GOSHMEMI_H
#undef GOSHMEMI_K

#define GOSHMEMI_P goshmemi_mpich_
#define GOSHMEMI_H goshmemi_mpich_handle
#define GOSHMEMI_K mpich_k
#include "calls.h"
#undef GOSHMEMI_P
#undef GOSHMEMI_H
#undef GOSHMEMI_K

void goshmemi_mpi_close(void)
{
	memset(&mpi_fn, 0, sizeof mpi_fn);
	memset(&ompi_k, 0, sizeof ompi_k);
	mpi_impl = GOSHMEMI_MPI_NONE;
	if (mpi_lib) {
		dlclose(mpi_lib);
		mpi_lib = NULL;
	}
}

int goshmemi_mpi_open(const char *lib, char *err, size_t errlen)
{
	void *h;

	if (errlen > 0)
		err[0] = '\0';
	if (mpi_lib)
		goshmemi_mpi_close();
	dlerror();
	h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen failed");
		return 1;
	}
	mpi_lib = h;
#define GOSHMEMI_RESOLVE(name)                                    \
	mpi_fn.name = dlsym(h, "MPI_" #name);                     \
	if (!mpi_fn.name) {                                       \
		snprintf(err, errlen, "%s", "MPI_" #name);        \
		goshmemi_mpi_close();                             \
		return 2;                                         \
	}
	GOSHMEMI_MPI_SYMBOLS(GOSHMEMI_RESOLVE)
#undef GOSHMEMI_RESOLVE
	return 0;
}

int goshmemi_mpi_has_symbol(const char *name)
{
	return mpi_lib && dlsym(mpi_lib, name) != NULL;
}

int goshmemi_mpi_select(int impl, char *err, size_t errlen)
{
	if (errlen > 0)
		err[0] = '\0';
	if (!mpi_lib) {
		snprintf(err, errlen, "no library open");
		return 1;
	}
	switch (impl) {
	case GOSHMEMI_MPI_OMPI:
#define GOSHMEMI_GLOBAL(field, sym)                        \
	ompi_k.field = dlsym(mpi_lib, sym);                \
	if (!ompi_k.field) {                               \
		snprintf(err, errlen, "%s", sym);          \
		memset(&ompi_k, 0, sizeof ompi_k);         \
		return 2;                                  \
	}
		GOSHMEMI_GLOBAL(world, "ompi_mpi_comm_world")
		GOSHMEMI_GLOBAL(byte, "ompi_mpi_byte")
		GOSHMEMI_GLOBAL(int_, "ompi_mpi_int")
		GOSHMEMI_GLOBAL(op_min, "ompi_mpi_op_min")
		GOSHMEMI_GLOBAL(info_null, "ompi_mpi_info_null")
		GOSHMEMI_GLOBAL(errors_return, "ompi_mpi_errors_return")
#undef GOSHMEMI_GLOBAL
		ompi_k.comm_type_shared = GOSHMEMI_OMPI_COMM_TYPE_SHARED;
		break;
	case GOSHMEMI_MPI_MPICH:
		break;
	default:
		snprintf(err, errlen, "unknown ABI %d", impl);
		return 1;
	}
	mpi_impl = impl;
	return 0;
}

int goshmemi_mpi_impl(void) { return mpi_impl; }

/* OPENED(f, args): call a handle-free function of an opened library. */
#define OPENED(f, ...) (mpi_fn.f ? ((goshmemi_MPI_##f##_fn)mpi_fn.f)(__VA_ARGS__) : GOSHMEMI_MPI_NOT_LOADED)

int goshmemi_mpi_library_version(char *buf, int *len) { return OPENED(Get_library_version, buf, len); }
int goshmemi_mpi_initialized(int *flag) { return OPENED(Initialized, flag); }
int goshmemi_mpi_finalized(int *flag) { return OPENED(Finalized, flag); }
int goshmemi_mpi_error_string(int code, char *buf, int *len) { return OPENED(Error_string, code, buf, len); }

int goshmemi_mpi_finalize(void)
{
	return mpi_impl != GOSHMEMI_MPI_NONE ? ((goshmemi_MPI_Finalize_fn)mpi_fn.Finalize)() : GOSHMEMI_MPI_NOT_LOADED;
}

/* SELECTED(call): call this ABI's version of call. */
#define SELECTED(call)                                                \
	(mpi_impl == GOSHMEMI_MPI_OMPI	  ? goshmemi_ompi_##call       \
	 : mpi_impl == GOSHMEMI_MPI_MPICH ? goshmemi_mpich_##call      \
					  : GOSHMEMI_MPI_NOT_LOADED)

int goshmemi_mpi_init_thread(int required, int *provided) { return SELECTED(init_thread(required, provided)); }
int goshmemi_mpi_rank(int *rank) { return SELECTED(rank(rank)); }
int goshmemi_mpi_size(int *size) { return SELECTED(size(size)); }
int goshmemi_mpi_barrier(void) { return SELECTED(barrier()); }
int goshmemi_mpi_allgather(const void *in, int n, void *out) { return SELECTED(allgather(in, n, out)); }
int goshmemi_mpi_bcast(void *buf, int n, int root) { return SELECTED(bcast(buf, n, root)); }
int goshmemi_mpi_abort(int code) { return SELECTED(abort(code)); }
int goshmemi_mpi_node_leaders(int *leaders) { return SELECTED(node_leaders(leaders)); }
