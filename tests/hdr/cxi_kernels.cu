/* nvcc compile check of include/goshmem/cxi.h (GPU-triggered barrier, active messages). */
#include <goshmem.h>
extern "C" __global__ void k_cxi(int *rc, uint64_t *out) {
    if (threadIdx.x == 0) {
        rc[0] = goshmemx_cxi_barrier();
        uint64_t a[2] = {1, 2};
        rc[1] = goshmemx_cxi_am_send(0, 3, 0, a, 2);
        goshmemx_cxi_msg_t m;
        rc[2] = goshmemx_cxi_am_poll(0, &m);
        out[0] = m.args[0];
    }
}
