// shim.c: see shim.h. The only file of goshmem that dlopens rdma-core.

#define _GNU_SOURCE /* dlvsym, dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

struct gv_lib gv_lib;

static void *gv_handle[2]; /* libibverbs, libmlx5 */

static void gv_put(char *err, size_t errlen, const char *what, const char *detail)
{
	snprintf(err, errlen, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
}

int gv_load(const char *ibverbs, const char *mlx5, char *err, size_t errlen)
{
	struct gv_lib l;
	void *hv, *hm;
	const char *e;

	if (errlen > 0)
		err[0] = '\0';
	memset(&l, 0, sizeof l);
	dlerror();
	hv = dlopen(ibverbs, RTLD_NOW | RTLD_LOCAL);
	if (!hv) {
		e = dlerror();
		gv_put(err, errlen, e ? e : "dlopen failed", NULL);
		return GV_LOAD_NO_IBVERBS;
	}
	hm = dlopen(mlx5, RTLD_NOW | RTLD_LOCAL);
	if (!hm) {
		e = dlerror();
		gv_put(err, errlen, e ? e : "dlopen failed", NULL);
		dlclose(hv);
		return GV_LOAD_NO_MLX5;
	}
	/* Each symbol by the version its prototype belongs to (abi.h). */
#define GV_RESOLVE(h, rc, name, version)                                                \
	do {                                                                            \
		dlerror();                                                              \
		*(void **)&l.name = dlvsym(h, #name, version);                          \
		if (!l.name) {                                                          \
			e = dlerror();                                                  \
			gv_put(err, errlen, #name "@" version, e ? e : "not exported"); \
			dlclose(hm);                                                    \
			dlclose(hv);                                                    \
			return rc;                                                      \
		}                                                                       \
	} while (0);
#define GV_RESOLVE_IBVERBS(name, version, ret, params) GV_RESOLVE(hv, GV_LOAD_OLD_IBVERBS, name, version)
#define GV_RESOLVE_MLX5(name, version, ret, params) GV_RESOLVE(hm, GV_LOAD_OLD_MLX5, name, version)
	GV_IBVERBS_FUNCS(GV_RESOLVE_IBVERBS)
	GV_MLX5_FUNCS(GV_RESOLVE_MLX5)
#undef GV_RESOLVE_MLX5
#undef GV_RESOLVE_IBVERBS
#undef GV_RESOLVE
	/* A second successful load (the same libraries: dlopen counts) drops
	 * the first one's references. */
	if (gv_handle[0]) {
		dlclose(gv_handle[1]);
		dlclose(gv_handle[0]);
	}
	gv_handle[0] = hv;
	gv_handle[1] = hm;
	gv_lib = l;
	return GV_LOAD_OK;
}

int gv_lib_path(int which, char *buf, size_t n)
{
	Dl_info info;
	void *fn;
	char real[PATH_MAX];

	if (n == 0 || which < 0 || which > 1 || !gv_handle[which])
		return -1;
	fn = which == 0 ? *(void **)&gv_lib.ibv_open_device : *(void **)&gv_lib.mlx5dv_open_device;
	if (!dladdr(fn, &info) || !info.dli_fname)
		return -1;
	if (!realpath(info.dli_fname, real))
		snprintf(real, sizeof real, "%s", info.dli_fname);
	snprintf(buf, n, "%s", real);
	return 0;
}

/* gv_verbs_ctx_with is verbs.h's verbs_get_ctx_op without the NULL check
 * of the entry point: the struct verbs_context a context is the last field
 * of, when it is extended and its provider's struct reaches the entry
 * point at op_off. */
static struct gv_verbs_context *gv_verbs_ctx_with(struct gv_ibv_context *ctx, size_t op_off)
{
	struct gv_verbs_context *v;

	if (ctx->abi_compat != GV___VERBS_ABI_IS_EXTENDED)
		return NULL;
	v = (struct gv_verbs_context *)(void *)((uint8_t *)ctx - offsetof(struct gv_verbs_context, context));
	if (v->sz < sizeof(*v) - op_off)
		return NULL;
	return v;
}

int gv_ibv_query_port(struct gv_ibv_context *context, uint8_t port_num, struct gv_ibv_port_attr *port_attr)
{
	struct gv_verbs_context *v = gv_verbs_ctx_with(context, offsetof(struct gv_verbs_context, query_port));

	if (!v || !v->query_port) {
		memset(port_attr, 0, sizeof *port_attr);
		return gv_lib.ibv_query_port(context, port_num, port_attr);
	}
	return v->query_port(context, port_num, port_attr, sizeof *port_attr);
}

struct gv_ibv_qp *gv_ibv_create_qp_ex(struct gv_ibv_context *context, struct gv_ibv_qp_init_attr_ex *attr)
{
	struct gv_verbs_context *v;

	if (attr->comp_mask == GV_IBV_QP_INIT_ATTR_PD)
		return gv_lib.ibv_create_qp(attr->pd, attr);
	v = gv_verbs_ctx_with(context, offsetof(struct gv_verbs_context, create_qp_ex));
	if (!v || !v->create_qp_ex) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return v->create_qp_ex(context, attr);
}
