/*
 * grid_sync.cuh - every block of a grid meets here once, without a cooperative
 * launch. Internal to kernels/.
 *
 * Why not cooperative groups' grid.sync(): it needs a cooperative launch, which
 * the forward's programmatic launches and graph capture were never tried with;
 * this barrier needs only that every block of the grid can be resident at once,
 * which the launcher checks on the host (the occupancy calculator; see
 * KN_GRID_SYNC_SHARERS). Blocks that are not yet resident (the kernel before
 * still holds their SMs) become so as it ends, since it never waits on this one;
 * the kernel after starts early only once every block here has triggered it, so
 * it cannot hold their SMs either.
 *
 * The words (two unsigned in global memory, zeroed once at start-up): [0] counts
 * arrivals, [1] counts completed barriers. The last block to arrive resets [0]
 * and bumps [1]; the others spin on [1]. Both end as they began modulo the
 * generation, so the same words serve every launch and every graph replay, as long
 * as two grids never use them at once (one set per stream).
 */
#ifndef LAYAD_KERNELS_GRID_SYNC_CUH
#define LAYAD_KERNELS_GRID_SYNC_CUH

#include <stdint.h>

/* Grids waiting at such barriers at once on one device that must all fit: two backends (two
 * models) on one GPU may each run one. Two partly resident grids that together exceed the
 * device would each wait for blocks the other holds out; launchers ask for a grid that fits
 * this many times over (the occupancy calculator's blocks a SM x SMs). */
#define KN_GRID_SYNC_SHARERS 2
#define KN_GRID_SYNC_TIMEOUT_NS 10000000000ull /* a block stuck this long is a bug: trap, not hang */

__device__ __forceinline__ uint64_t kn_globaltimer()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Every thread of the block returns once every block of the grid has called this,
 * with the writes each block made before its call visible to all (read them with
 * ld.global.cg or volatile: this SM's L1 is not coherent with the others'). */
__device__ __forceinline__ void kn_grid_sync(unsigned *words)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile unsigned *gen = words + 1;
        const unsigned g = *gen, n = gridDim.x * gridDim.y * gridDim.z;
        __threadfence(); /* the block's writes, and g's read, before the arrival */
        if (atomicAdd(words, 1u) == n - 1) {
            atomicExch(words, 0u);
            __threadfence();
            atomicAdd(words + 1, 1u);
        } else {
            const uint64_t t0 = kn_globaltimer();
            while (*gen == g) {
                __nanosleep(32);
                if (kn_globaltimer() - t0 > KN_GRID_SYNC_TIMEOUT_NS)
                    __trap();
            }
        }
        __threadfence();
    }
    __syncthreads();
}

#endif
