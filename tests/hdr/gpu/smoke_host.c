/* smoke_host.c: loads smoke.fatbin twice (2 PEs in one context, one GPU),
 * sets each module's goshmemi_device_state with cuModuleGetGlobal, runs both
 * PEs' kernels concurrently, checks results. libcuda is dlopen'ed: no SDK.
 * usage: smoke_host smoke.fatbin [all_peers_same_device] */
#define _GNU_SOURCE 1
#include <goshmem/device_state.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void *CUctx, *CUmod, *CUfn, *CUstream;
#define FN(name, ...) static CUresult (*name)(__VA_ARGS__)
FN(cuInit, unsigned);
FN(cuDeviceGet, int *, int);
FN(cuCtxCreate_v2, CUctx *, unsigned, int);
FN(cuModuleLoadData, CUmod *, const void *);
FN(cuModuleGetGlobal_v2, CUdeviceptr *, size_t *, CUmod, const char *);
FN(cuModuleGetFunction, CUfn *, CUmod, const char *);
FN(cuMemAlloc_v2, CUdeviceptr *, size_t);
FN(cuMemcpyHtoD_v2, CUdeviceptr, const void *, size_t);
FN(cuMemcpyDtoH_v2, void *, CUdeviceptr, size_t);
FN(cuMemsetD8_v2, CUdeviceptr, unsigned char, size_t);
FN(cuStreamCreate, CUstream *, unsigned);
FN(cuLaunchKernel, CUfn, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **);
FN(cuCtxSynchronize, void);
FN(cuGetErrorString, CUresult, const char **);

#define CK(x)                                                                                                         \
    do {                                                                                                              \
        CUresult r_ = (x);                                                                                            \
        if (r_) {                                                                                                     \
            const char *s_ = "?";                                                                                     \
            cuGetErrorString(r_, &s_);                                                                                \
            fprintf(stderr, "%s:%d: %s = %d (%s)\n", __FILE__, __LINE__, #x, r_, s_);                                 \
            exit(1);                                                                                                  \
        }                                                                                                             \
    } while (0)

int main(int argc, char **argv)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) { fprintf(stderr, "no libcuda: %s\n", dlerror()); return 2; }
#define LOAD(name) *(void **)&name = dlsym(h, #name)
    LOAD(cuInit); LOAD(cuDeviceGet); LOAD(cuCtxCreate_v2); LOAD(cuModuleLoadData); LOAD(cuModuleGetGlobal_v2);
    LOAD(cuModuleGetFunction); LOAD(cuMemAlloc_v2); LOAD(cuMemcpyHtoD_v2); LOAD(cuMemcpyDtoH_v2); LOAD(cuMemsetD8_v2);
    LOAD(cuStreamCreate); LOAD(cuLaunchKernel); LOAD(cuCtxSynchronize); LOAD(cuGetErrorString);
    int same = argc > 2 ? atoi(argv[2]) : 0;
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 2; }
    static char img[1 << 24];
    size_t len = fread(img, 1, sizeof img, f);
    fclose(f);
    (void)len;
    int dev;
    CUctx ctx;
    CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuCtxCreate_v2(&ctx, 0, dev));
    const size_t heap = 1 << 22;
    CUdeviceptr heaps, states;
    CK(cuMemAlloc_v2(&heaps, 2 * heap)); CK(cuMemsetD8_v2(heaps, 0, 2 * heap));
    CK(cuMemAlloc_v2(&states, 2 * sizeof(goshmemi_device_state_t)));
    /* per PE: the team epochs and the team table (world in row 0) */
    enum { NTEAMS = 2 };
    CUdeviceptr tables;
    CK(cuMemAlloc_v2(&tables, 2 * NTEAMS * (8 + sizeof(goshmemi_team_t))));
    CK(cuMemsetD8_v2(tables, 0, 2 * NTEAMS * (8 + sizeof(goshmemi_team_t))));
    CUmod mod[2]; CUfn info[2], run[2]; CUstream st[2];
    for (int pe = 0; pe < 2; pe++) {
        goshmemi_device_state_t s;
        memset(&s, 0, sizeof s);
        s.version = GOSHMEMI_DEVICE_STATE_VERSION; s.size = sizeof s; s.my_pe = pe; s.n_pes = 2; s.heap_size = heap;
        s.heap_base[0] = heaps; s.heap_base[1] = heaps + heap;
        CUdeviceptr ep = tables + pe * NTEAMS * (8 + sizeof(goshmemi_team_t)), tp = ep + 8 * NTEAMS;
        s.team_epoch = (uint64_t *)(uintptr_t)ep;
        s.teams = (goshmemi_team_t *)(uintptr_t)tp;
        s.max_teams = NTEAMS;
        goshmemi_team_t world;
        memset(&world, 0, sizeof world);
        world.size = 2; world.stride = 1; world.my_index = pe;
        CK(cuMemcpyHtoD_v2(tp, &world, sizeof world));
        s.team_inline[0] = world;
        s.all_peers_same_device = (uint32_t)same;
        CUdeviceptr sp = states + pe * sizeof s;
        CK(cuMemcpyHtoD_v2(sp, &s, sizeof s));
        CK(cuModuleLoadData(&mod[pe], img));
        CUdeviceptr sym; size_t bytes;
        CK(cuModuleGetGlobal_v2(&sym, &bytes, mod[pe], "goshmemi_device_state"));
        printf("PE %d: cuModuleGetGlobal(goshmemi_device_state) -> %zu bytes at 0x%llx\n", pe, bytes, sym);
        if (bytes != 8) return 1;
        CK(cuMemcpyHtoD_v2(sym, &sp, 8));
        /* the constant copy the hot paths read (state.h) */
        CK(cuModuleGetGlobal_v2(&sym, &bytes, mod[pe], "goshmemi_device_state_c"));
        if (bytes != sizeof s) return 1;
        CK(cuMemcpyHtoD_v2(sym, &s, sizeof s));
        CK(cuModuleGetFunction(&info[pe], mod[pe], "smoke_info"));
        CK(cuModuleGetFunction(&run[pe], mod[pe], "smoke_run"));
        CK(cuStreamCreate(&st[pe], 1 /* non-blocking */));
    }
    CUdeviceptr out; CK(cuMemAlloc_v2(&out, 64)); CK(cuMemsetD8_v2(out, 0, 64));
    int fails = 0;
    for (int pe = 0; pe < 2; pe++) {
        CUdeviceptr o = out + 16 * pe; void *a[] = {&o};
        CK(cuLaunchKernel(info[pe], 1, 1, 1, 1, 1, 1, 0, st[pe], a, NULL));
    }
    CK(cuCtxSynchronize());
    int got[16]; CK(cuMemcpyDtoH_v2(got, out, 64));
    for (int pe = 0; pe < 2; pe++) {
        printf("PE %d: my_pe=%d n_pes=%d state_ok=%d\n", pe, got[4 * pe], got[4 * pe + 1], got[4 * pe + 2]);
        fails += got[4 * pe] != pe || got[4 * pe + 1] != 2 || got[4 * pe + 2] != 1;
    }
    /* symmetric layout after the control area */
    size_t off = (size_t)goshmemi_device_control_bytes(NTEAMS);
    int n = 4096, rounds = 2000;
    CUdeviceptr errs; CK(cuMemAlloc_v2(&errs, 8)); CK(cuMemsetD8_v2(errs, 0, 8));
    struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int pe = 0; pe < 2; pe++) {
        CUdeviceptr base = heaps + pe * heap;
        CUdeviceptr buf = base + off, sig = buf + 4 * n, ack = sig + 64, src = ack + 64, ctr = src + 4 * n;
        void *a[] = {&buf, &sig, &ack, &src, &n, &rounds, &ctr, &errs};
        CK(cuLaunchKernel(run[pe], 1, 1, 1, 256, 1, 1, 0, st[pe], a, NULL));
    }
    CK(cuCtxSynchronize());
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int e; CK(cuMemcpyDtoH_v2(&e, errs, 4));
    goshmemi_device_state_t s0; CK(cuMemcpyDtoH_v2(&s0, states, sizeof s0));
    uint64_t epoch0; CK(cuMemcpyDtoH_v2(&epoch0, tables, 8));
    printf("smoke_run (same_device=%d): errors=%d, error_code=%llu, team_epoch[0]=%llu, %.1f ms\n", same, e,
           (unsigned long long)s0.error_code, (unsigned long long)epoch0,
           (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
    fails += e != 0 || s0.error_code != 0 || epoch0 != 1003;
    printf("gpu smoke: %s\n", fails ? "FAILED" : "passed");
    return fails ? 1 : 0;
}
