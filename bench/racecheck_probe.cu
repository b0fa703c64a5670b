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
 * about the tool's model of barriers, not the kernel:
 *   - "equal": both groups run N named barriers, then the handoff;
 *   - "unequal": group 0 runs N, group 1 runs 1, then the same handoff;
 *   - "none": group 0 runs N, group 1 none (a group with no key tile);
 *   - "racy": the same without the __syncthreads (a real race, the control
 *     that racecheck must flag).
 * Each case also checks the values group 0 read, so a plain run shows the
 * handoff works; run it under `compute-sanitizer --tool racecheck` to see what
 * the tool says of each case (the case name is printed before its launch).
 *
 * Usage: racecheck_probe [case]   (case: equal, unequal, none, racy; default all but racy)
 */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>

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

/* Group 0 runs n0 named barriers and group 1 n1, each storing to its own
 * slice between them (work the barriers order); then group 1 hands one value
 * a thread to group 0 through shared memory, across __syncthreads unless
 * racy. out[t] = what thread t of group 0 read (expected 1000 + t). */
__global__ void handoff(int n0, int n1, int racy, int *out)
{
    __shared__ int slice[2][GROUP];
    __shared__ int st[GROUP];
    const int g = threadIdx.x / GROUP, t = threadIdx.x % GROUP;
    const int n = g ? n1 : n0;
    for (int k = 0; k < n; k++) {
        slice[g][t] = k;
        group_bar(g);
        out[GROUP + g * GROUP + t] = slice[g][(t + 1) % GROUP];
        group_bar(g);
    }
    if (g == 1)
        st[t] = 1000 + t;
    if (!racy)
        __syncthreads();
    if (g == 1)
        return;
    out[t] = st[t];
}

static int run_case(const char *name, int n0, int n1, int racy, int *dout)
{
    int host[GROUP];
    printf("case %s: group 0 runs %d named barriers, group 1 %d, %s\n", name, 2 * n0, 2 * n1,
           racy ? "no __syncthreads before the handoff" : "__syncthreads before the handoff");
    fflush(stdout);
    cudaMemset(dout, 0, 3 * GROUP * sizeof(int));
    handoff<<<1, 2 * GROUP>>>(n0, n1, racy, dout);
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess)
        e = cudaMemcpy(host, dout, sizeof host, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        fprintf(stderr, "case %s: %s\n", name, cudaGetErrorString(e));
        return 1;
    }
    int bad = 0;
    for (int t = 0; t < GROUP; t++)
        bad += host[t] != 1000 + t;
    printf("case %s: %d of %d values read wrong\n", name, bad, GROUP);
    return 0;
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    int *dout = NULL, rc = 0;
    if (cudaMalloc(&dout, 3 * GROUP * sizeof(int)) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc failed\n");
        return 1;
    }
    if (!only || !strcmp(only, "equal"))
        rc |= run_case("equal", 3, 3, 0, dout);
    if (!only || !strcmp(only, "unequal"))
        rc |= run_case("unequal", 3, 1, 0, dout);
    if (!only || !strcmp(only, "none"))
        rc |= run_case("none", 3, 0, 0, dout);
    if (only && !strcmp(only, "racy"))
        rc |= run_case("racy", 3, 3, 1, dout);
    cudaFree(dout);
    return rc;
}
