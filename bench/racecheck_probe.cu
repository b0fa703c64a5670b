/*
 * racecheck_probe.cu - does compute-sanitizer's racecheck follow a block
 * barrier (__syncthreads) when two groups of warps have run different numbers
 * of named barriers (bar.sync id, count) before it? (GPU machine.)
 *
 * The attention's two-group form (kernels/attention.cu) walks each half of the
 * key tiles in one group of four warps, each group on its own named barrier,
 * and the halves may hold different numbers of tiles. Group 1 then stores its
 * softmax state to shared memory, the block meets at __syncthreads, and group 0
 * reads it. racecheck reports that store and that load as RAW hazards. This
 * probe repeats the pattern with nothing else around it, so a report here is
 * about the tool's model of barriers, not the kernel, and then adds the
 * kernel's other parts one at a time (features, below). What it found on an
 * H100 (bench/results/experiments/att-wgmma/, call 8): "more" and "first" are
 * reported, with or without the features, "equal", "unequal" and "none" are
 * not, and every value reads right in all of them; so racecheck reports the
 * handoff exactly when the storing group passed more named barriers
 * (kernels/attention.cu, KN_ATT_PAD_BARRIERS). The cases:
 *   - "equal": both groups run N named barriers, then the handoff;
 *   - "unequal": group 0 runs N, group 1 runs 1, then the same handoff;
 *   - "none": group 0 runs N, group 1 none (a group with no key tile);
 *   - "more": group 0 runs 1, group 1 runs 3 (the walk's halves can give the
 *     second group more tiles: a span that starts at an odd tile);
 *   - "first": group 0 runs none, group 1 runs 1;
 *   - "racy": the same without the __syncthreads (a real race, the control
 *     that racecheck must flag).
 * Each case also checks the values group 0 read, so a plain run shows the
 * handoff works; run it under `compute-sanitizer --tool racecheck` to see what
 * the tool says of each case (the case name is printed before its launch).
 *
 * Usage: racecheck_probe [case [features]]   (case: equal, unequal, none, more, first, racy;
 * default all but racy; features: the F_ bits below, default 0)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_check.cuh"
#include "kernels/mma.cuh" /* cp_async16, kn_pdl_wait (kernels/cuda_util.cuh) */

#define GROUP 128

/* bar.sync on group g's own barrier (1 + g), 128 threads; immediate ids as in
 * the attention. */
__device__ __forceinline__ void group_bar(int g)
{
    if (g)
        asm volatile("bar.sync 2, %0;" ::"n"(GROUP) : "memory");
    else
        asm volatile("bar.sync 1, %0;" ::"n"(GROUP) : "memory");
}

/* What the probe can add around the handoff, to find which part of the
 * attention makes racecheck report it (a bit mask, any case): */
enum {
    F_CPASYNC = 1, /* the walk's stores are cp.async copies waited for before each barrier */
    F_PDL = 2,     /* griddepcontrol.wait and launch_dependents at the start */
    F_HIGH = 4,    /* the state array at byte 84 K of 100 KB of dynamic shared memory */
    F_GRID = 8,    /* 264 blocks (two an SM at 100 KB), not one */
    F_ARRIVE = 16, /* the handoff on barrier 3: group 1 arrives (no wait), group 0 syncs */
};
#define HIGH_AT (84 * 1024)
#define HIGH_SMEM (100 * 1024)

/* The block's meeting before group 0 reads what group 1 stored: __syncthreads,
 * or group 1 arriving on barrier 3 (no wait) while group 0 syncs there; none
 * when racy. Returns whether the thread goes on to read (group 0). */
__device__ __forceinline__ bool meet(int g, int racy, int arrive)
{
    if (arrive && g == 1 && !racy)
        asm volatile("bar.arrive 3, %0;" ::"n"(2 * GROUP) : "memory");
    else if (arrive && !racy)
        asm volatile("bar.sync 3, %0;" ::"n"(2 * GROUP) : "memory");
    else if (!racy)
        __syncthreads();
    return g == 0;
}

/* Group 0 runs n0 pairs of named barriers and group 1 n1, each storing to its
 * own slice between them (work the barriers order); then group 1 hands one
 * value a thread to group 0 through shared memory (meet). out[block][t] = what
 * thread t of group 0 read (expected 1000 + t). */
__global__ void handoff(int n0, int n1, int racy, int feat, const int *src, int *out)
{
    extern __shared__ __align__(16) unsigned char raw[];
    int(*slice)[GROUP] = reinterpret_cast<int(*)[GROUP]>(raw);
    int *st = reinterpret_cast<int *>(raw + (feat & F_HIGH ? HIGH_AT : 2 * GROUP * sizeof(int)));
    const int g = threadIdx.x / GROUP, t = threadIdx.x % GROUP;
    const int n = g ? n1 : n0;
    out += (size_t)blockIdx.x * 3 * GROUP;
    if (feat & F_PDL) {
        kn_pdl_wait();
        kn_pdl_trigger();
    }
    for (int k = 0; k < n; k++) {
        if (feat & F_CPASYNC) { /* 16 bytes a fourth thread, as the attention stages its tiles */
            if (t % 4 == 0)
                cp_async16(&slice[g][t], src + t, true);
            cp_async_commit();
            cp_async_wait<0>();
        } else {
            slice[g][t] = k;
        }
        group_bar(g);
        out[GROUP + g * GROUP + t] = slice[g][(t + 1) % GROUP];
        group_bar(g);
    }
    if (g == 1)
        st[t] = 1000 + t;
    if (meet(g, racy, feat & F_ARRIVE))
        out[t] = st[t];
}

/* One case: prints how many of group 0's values were read wrong. */
static void run_case(const char *name, int n0, int n1, int racy, int feat, const int *src, int *dout)
{
    const int blocks = feat & F_GRID ? 264 : 1;
    const size_t smem = feat & F_HIGH ? HIGH_SMEM : 3 * GROUP * sizeof(int);
    static int host[264 * 3 * GROUP];
    printf("case %s, features %d: group 0 runs %d named barriers, group 1 %d, %s\n", name, feat, 2 * n0, 2 * n1,
           racy ? "nothing orders the handoff" : "a barrier orders the handoff");
    fflush(stdout);
    CK(cudaFuncSetAttribute(handoff, cudaFuncAttributeMaxDynamicSharedMemorySize, HIGH_SMEM));
    CK(cudaMemset(dout, 0, (size_t)blocks * 3 * GROUP * sizeof(int)));
    handoff<<<blocks, 2 * GROUP, smem>>>(n0, n1, racy, feat, src, dout);
    CK(cudaGetLastError());
    CK(cudaMemcpy(host, dout, (size_t)blocks * 3 * GROUP * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int b = 0; b < blocks; b++)
        for (int t = 0; t < GROUP; t++)
            bad += host[b * 3 * GROUP + t] != 1000 + t;
    printf("case %s, features %d: %d of %d values read wrong\n", name, feat, bad, blocks * GROUP);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int n0, n1, racy; /* racy: only when asked for by name */
    } cases[] = {{"equal", 3, 3, 0}, {"unequal", 3, 1, 0}, {"none", 3, 0, 0},
                 {"more", 1, 3, 0},  {"first", 0, 1, 0},   {"racy", 3, 3, 1}};
    const char *only = argc > 1 ? argv[1] : NULL;
    const int feat = argc > 2 ? atoi(argv[2]) : 0;
    int *dout = NULL, *src = NULL;
    CK(cudaMalloc(&dout, 264 * 3 * GROUP * sizeof(int)));
    CK(cudaMalloc(&src, GROUP * sizeof(int)));
    CK(cudaMemset(src, 0, GROUP * sizeof(int)));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (only ? !strcmp(only, cases[i].name) : !cases[i].racy)
            run_case(cases[i].name, cases[i].n0, cases[i].n1, cases[i].racy, feat, src, dout);
    CK(cudaFree(src));
    CK(cudaFree(dout));
    return 0;
}
