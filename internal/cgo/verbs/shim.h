/*
 * shim.h: goshmem's dlopen loader for rdma-core (libibverbs.so.1 and
 * libmlx5.so.1) and the header inlines it stands in for. Every call into
 * rdma-core goes through gv_lib, filled by gv_load; nothing may be called
 * before gv_load returned 0.
 */
#ifndef GOSHMEMI_VERBS_SHIM_H
#define GOSHMEMI_VERBS_SHIM_H

#include <stddef.h>

#include "abi.h"

/* gv_lib holds one pointer per function of abi.h's lists, named as the
 * function is. */
struct gv_lib {
#define GV_FIELD(name, version, ret, params) ret(*name) params;
	GV_IBVERBS_FUNCS(GV_FIELD)
	GV_MLX5_FUNCS(GV_FIELD)
#undef GV_FIELD
};
extern struct gv_lib gv_lib;

/* gv_load's results. */
#define GV_LOAD_OK 0
#define GV_LOAD_NO_IBVERBS 1  /* dlopen of libibverbs failed: err is dlerror's text */
#define GV_LOAD_NO_MLX5 2     /* dlopen of libmlx5 failed: err is dlerror's text */
#define GV_LOAD_OLD_IBVERBS 3 /* libibverbs lacks a function: err is name@version: dlerror */
#define GV_LOAD_OLD_MLX5 4    /* libmlx5 lacks a function: err is name@version: dlerror */

/* gv_load dlopens ibverbs, then mlx5 (RTLD_NOW | RTLD_LOCAL: libmlx5 and
 * the providers libibverbs loads itself name libibverbs as a dependency,
 * so nothing needs global symbols), and resolves every function with
 * dlvsym. On success gv_lib is filled and the libraries stay loaded for
 * the life of the process (rdma-core objects may outlive any caller). On
 * failure gv_lib is left as it was. */
int gv_load(const char *ibverbs, const char *mlx5, char *err, size_t errlen);

/* gv_lib_path writes the file the loaded library lies in (the file name
 * after symbolic links: rdma-core names it with its release, e.g.
 * libmlx5.so.1.24.44.0). which: 0 libibverbs, 1 libmlx5. Returns 0, or -1
 * before gv_load succeeded or when the path is unknown. */
int gv_lib_path(int which, char *buf, size_t n);

/* gv_ibv_query_port is verbs.h's ibv_query_port: the macro's static
 * inline ___ibv_query_port calls the provider's verbs_context query_port
 * with the size of struct ibv_port_attr when the provider has it, else
 * the exported ibv_query_port, which fills struct _compat_ibv_port_attr
 * (the prefix of struct ibv_port_attr before flags; the rest is zeroed). */
int gv_ibv_query_port(struct gv_ibv_context *context, uint8_t port_num, struct gv_ibv_port_attr *port_attr);

/* gv_ibv_create_qp_ex is verbs.h's static inline ibv_create_qp_ex: with a
 * comp_mask of IBV_QP_INIT_ATTR_PD alone it is ibv_create_qp (whose struct
 * ibv_qp_init_attr is the prefix of the extended one); otherwise the
 * provider's verbs_context create_qp_ex, or NULL with errno EOPNOTSUPP
 * when the provider has none. */
struct gv_ibv_qp *gv_ibv_create_qp_ex(struct gv_ibv_context *context, struct gv_ibv_qp_init_attr_ex *attr);

#endif
