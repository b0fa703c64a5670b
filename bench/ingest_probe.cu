/*
 * ingest_probe.cu - experiment: how fast bytes reach one SM's shared memory, and how
 * fast one SM sees another's flag. The question the own GEMMs' and the persistent
 * kernel's post-mortems left (bench/results/experiments/README.md, "persistent" and
 * "mcast"): every SM there took 30-40 GB/s from the memory system whatever it asked for,
 * so a small pack's activations, which every CTA of a K-complete tile reads whole, cost
 * as much as the weights. Is that rate the SM's port, the L2's total over 132 readers,
 * or the bytes those kernels kept in flight? Each block (one an SM: its shared memory
 * holds it alone) moves `bytes` with the TMA engine's bulk copies, `chunk` bytes a copy,
 * timed by its own clock:
 *
 *   - shared: every block reads the same bytes (a pack's X, which L2 holds), all its
 *     copies at once, issued by `issuers` of its threads;
 *   - l2: the same with each block its own bytes, all of them in L2 (read once before
 *     the timing);
 *   - dram: each block fresh bytes every repeat, from a buffer 80x the L2, through a
 *     ring of `depth` copies in flight issued by one thread;
 *   - dram-spread: dram, all copies at once as in shared (a weight tile of the small
 *     split kernel: one bulk copy a row);
 *   - mcast: shared, each CTA of a cluster of `cl` issuing every cl-th copy multicast
 *     to all of them (the L2 serves the bytes once a cluster);
 *   - cpasync: shared, by 16-byte cp.async from 128 threads, as the library's small
 *     split kernel copies X (kernels/gemm_small.cu).
 *
 * and a flag's round trip between two SMs (a release store, an acquire spin), the
 * hand-off a persistent kernel's flag-based stages would pay.
 *
 * Any of shared, cpasync and mcast can read fresh bytes instead: written by every SM just
 * before the launch, each repeat its own region (see sweep_fresh).
 *
 * Build: make build/bench/ingest_probe (nvcc, sm_90a); run: build/bench/ingest_probe [fresh]
 * (fresh: that sweep only); one JSON object per line on stdout. Every mode but the fresh
 * reads ran on an H100 in calls 2-4; this sweep, which gathers their configurations in one
 * run, has not run as one. Results: bench/results/experiments/ingest/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include <cuda_runtime.h>

#include "bench/bench_check.cuh"  /* CK */
#include "bench/sm90_cluster.cuh" /* bulk_load, mbar_*, bulk_load_multicast, cluster_* */

enum { THREADS = 128, MAX_DEPTH = 128, BARS_BYTES = 8 * MAX_DEPTH, REPS = 9, SMEM_MAX = 200 * 1024 };
enum mode { SHARED, L2, DRAM, MCAST, CPASYNC, DRAM_SPREAD };
static const char *mode_name[] = {"shared", "l2", "dram", "mcast", "cpasync", "dram-spread"};

struct job {
    const char *src;   /* the buffer */
    size_t span;       /* its bytes */
    uint32_t bytes;    /* a block's bytes a repeat */
    uint32_t chunk;    /* bytes a copy */
    int depth;         /* copies in flight */
    int issuers;       /* shared / l2: threads issuing the copies, chunk i by thread i % issuers */
    int one_bar;       /* shared / l2: every copy completes on one barrier, as the library's loads do */
    int mode;
    int fresh;         /* shared, cpasync, mcast: repeat r reads region r of src, written by every SM
                        * just before the launch and not read since (a GEMM's X after the kernel
                        * before wrote it) */
    unsigned long long *cycles; /* [REPS][grid] */
    double *ns_per_cycle;       /* [grid] */
};

__device__ __forceinline__ unsigned long long gtime()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Where block b's bytes of repeat r start. */
__device__ const char *block_src(const job &j, int r)
{
    size_t off = 0;
    if (j.fresh)
        off = (size_t)r * j.bytes;
    else if (j.mode == L2)
        off = (size_t)blockIdx.x * j.bytes;
    else if (j.mode == DRAM || j.mode == DRAM_SPREAD)
        off = ((size_t)r * gridDim.x + blockIdx.x) * j.bytes % (j.span - j.bytes);
    return j.src + off;
}

/* One thread streams a repeat's chunks through the ring of d slots (no more than a
 * repeat's chunks: the ring is what the launch gave); c counts chunks over all
 * repeats, so that a slot's use (c / d) gives the parity its barrier completes with. */
__device__ void stream_ring(const job &j, const char *src, char *ring, uint64_t *bar, uint32_t &c)
{
    const uint32_t n = j.bytes / j.chunk, d = n < (uint32_t)j.depth ? n : (uint32_t)j.depth;
    for (uint32_t i = 0; i < n; i++, c++) {
        const uint32_t s = c % d;
        if (c >= d)
            mbar_wait(&bar[s], (c / d - 1) & 1);
        mbar_arrive_tx(&bar[s], j.chunk);
        bulk_load(ring + (size_t)s * j.chunk, src + (size_t)i * j.chunk, j.chunk, &bar[s]);
    }
    for (uint32_t k = c - (n < d ? n : d); k < c; k++)
        mbar_wait(&bar[k % d], (k / d) & 1);
}

/* Every chunk of the repeat at once, chunk i issued by thread i % issuers on its own
 * barrier, or all on barrier 0 armed once for the whole repeat (the ring holds it). */
__device__ void stream_spread(const job &j, const char *src, char *ring, uint64_t *bar, int r)
{
    const uint32_t n = j.bytes / j.chunk;
    if (j.one_bar && threadIdx.x == 0)
        mbar_arrive_tx(&bar[0], n * j.chunk);
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < n && (int)threadIdx.x < j.issuers; i += (uint32_t)j.issuers) {
        uint64_t *b = j.one_bar ? &bar[0] : &bar[i];
        if (!j.one_bar)
            mbar_arrive_tx(b, j.chunk);
        bulk_load(ring + (size_t)i * j.chunk, src + (size_t)i * j.chunk, j.chunk, b);
    }
    if (threadIdx.x == 0)
        for (uint32_t i = 0; i < (j.one_bar ? 1 : n); i++)
            mbar_wait(&bar[i], r & 1);
}

/* Every chunk lands in every CTA of the cluster; this one issues every cl-th. The ring
 * holds the whole repeat (no slot reuse), so a repeat's barriers are armed once. */
__device__ void stream_mcast(const job &j, const char *src, char *ring, uint64_t *bar, int r)
{
    const uint32_t n = j.bytes / j.chunk, cl = cluster_size(), rank = cluster_rank();
    for (uint32_t i = 0; i < n; i++)
        mbar_arrive_tx(&bar[i], j.chunk);
    for (uint32_t i = rank; i < n; i += cl)
        bulk_load_multicast(ring + (size_t)i * j.chunk, src + (size_t)i * j.chunk, j.chunk, &bar[i],
                            (uint16_t)((1u << cl) - 1));
    for (uint32_t i = 0; i < n; i++)
        mbar_wait(&bar[i], r & 1);
}

/* Every thread copies its 16-byte pieces of the repeat, all in flight at once. */
__device__ void stream_cpasync(const job &j, const char *src, char *ring)
{
    for (uint32_t o = threadIdx.x * 16; o < j.bytes; o += THREADS * 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(ring + o)), "l"(src + o)
                     : "memory");
    asm volatile("cp.async.commit_group;\ncp.async.wait_all;\n" ::: "memory");
}

__global__ void __launch_bounds__(THREADS) ingest_kernel(job j)
{
    extern __shared__ __align__(128) char smem[];
    uint64_t *bar = (uint64_t *)smem;
    char *ring = smem + BARS_BYTES;
    if (threadIdx.x == 0) {
        for (int s = 0; s < MAX_DEPTH; s++)
            mbar_init(&bar[s], 1);
        mbar_init_fence();
    }
    __syncthreads();
    uint32_t c = 0;
    unsigned long long g0 = 0, k0 = 0;
    for (int r = 0; r < REPS; r++) {
        const char *src = block_src(j, r);
        if (j.mode == MCAST) { /* a repeat's copies never meet the last one's barriers */
            cluster_arrive();
            cluster_wait();
        } else
            __syncthreads();
        const unsigned long long t0 = clock64();
        if (r == 0)
            g0 = gtime(), k0 = t0;
        if (j.mode == CPASYNC)
            stream_cpasync(j, src, ring);
        else if (j.mode == SHARED || j.mode == L2 || j.mode == DRAM_SPREAD)
            stream_spread(j, src, ring, bar, r);
        else if (threadIdx.x == 0 && j.mode == MCAST)
            stream_mcast(j, src, ring, bar, r);
        else if (threadIdx.x == 0)
            stream_ring(j, src, ring, bar, c);
        __syncthreads();
        if (threadIdx.x == 0)
            j.cycles[(size_t)r * gridDim.x + blockIdx.x] = clock64() - t0;
    }
    if (threadIdx.x == 0)
        j.ns_per_cycle[blockIdx.x] = (double)(gtime() - g0) / (double)(clock64() - k0);
    if (j.mode == MCAST) { /* no CTA leaves while a peer may still multicast into it */
        cluster_arrive();
        cluster_wait();
    }
}

/* The fresh regions rewritten, every block a share of every region (16-byte stores). */
__global__ void write_kernel(uint4 *dst, size_t n, unsigned salt)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = make_uint4((unsigned)i ^ salt, salt, (unsigned)(i >> 32), 1u);
}

/* Two blocks pass a counter back and forth n times through two flags in global memory. */
__global__ void pingpong_kernel(unsigned *flags, int n, unsigned long long *ns)
{
    if (threadIdx.x != 0)
        return;
    unsigned *mine = flags + 32 * blockIdx.x, *theirs = flags + 32 * (1 - blockIdx.x);
    const unsigned long long t0 = gtime();
    for (unsigned i = 1; i <= (unsigned)n; i++) {
        if (blockIdx.x == 0)
            asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(mine), "r"(i) : "memory");
        unsigned v = 0, polls = 0;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(theirs) : "memory");
            if (++polls > (1u << 30))
                __trap();
        } while (v != i);
        if (blockIdx.x == 1)
            asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(mine), "r"(i) : "memory");
    }
    ns[blockIdx.x] = gtime() - t0;
}

struct buffers {
    char *big;   /* DRAM runs: 80x the L2 */
    char *fresh; /* fresh runs: REPS regions of at most SMEM_MAX bytes */
    int sms;     /* the fresh regions' writers: one block an SM */
    size_t big_bytes;
    unsigned long long *cycles;
    double *npc;
};

static double quantile(std::vector<double> v, double q)
{
    std::sort(v.begin(), v.end());
    return v[(size_t)(q * (v.size() - 1))];
}

/* One configuration: its blocks' times of repeats 1.. (repeat 0 brings L2 runs' bytes in). */
static void run(const buffers &bf, int mode, int grid, int cl, uint32_t bytes, uint32_t chunk, int depth,
                int issuers = 1, int one_bar = 0, int fresh = 0)
{
    job j = {fresh ? bf.fresh : bf.big, bf.big_bytes, bytes, chunk, depth, issuers, one_bar, mode, fresh, bf.cycles,
             bf.npc};
    static unsigned salt;
    if (fresh) {
        write_kernel<<<bf.sms, 256>>>((uint4 *)bf.fresh, (size_t)REPS * bytes / 16, ++salt);
        CK(cudaGetLastError());
    }
    const uint32_t ring = mode == DRAM ? std::min<uint32_t>(bytes, (uint32_t)depth * chunk) : bytes;
    const size_t smem = BARS_BYTES + (size_t)ring;
    cudaLaunchConfig_t lc = {};
    cudaLaunchAttribute at[1];
    lc.gridDim = dim3(grid);
    lc.blockDim = dim3(THREADS);
    lc.dynamicSmemBytes = smem;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = cl, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
    lc.attrs = at;
    lc.numAttrs = 1;
    CK(cudaLaunchKernelEx(&lc, ingest_kernel, j));
    CK(cudaDeviceSynchronize());
    std::vector<unsigned long long> cyc((size_t)REPS * grid);
    std::vector<double> npc(grid), us;
    CK(cudaMemcpy(cyc.data(), bf.cycles, cyc.size() * sizeof cyc[0], cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(npc.data(), bf.npc, npc.size() * sizeof npc[0], cudaMemcpyDeviceToHost));
    for (int r = 1; r < REPS; r++)
        for (int b = 0; b < grid; b++)
            us.push_back(cyc[(size_t)r * grid + b] * npc[b] / 1000.0);
    const double p50 = quantile(us, 0.5), p90 = quantile(us, 0.9), mx = quantile(us, 1.0);
    printf("{\"probe\": \"ingest\", \"mode\": \"%s\", \"grid\": %d, \"cluster\": %d, \"bytes\": %u, \"chunk\": %u, "
           "\"depth\": %d, \"issuers\": %d, \"one_barrier\": %d, \"fresh\": %d, \"in_flight\": %u, "
           "\"us_p50\": %.3f, \"us_p90\": %.3f, \"us_max\": %.3f, "
           "\"sm_GBps\": %.1f, \"total_TBps\": %.3f, \"ghz\": %.3f}\n",
           mode_name[mode], grid, cl, bytes, chunk, depth, issuers, one_bar, fresh, ring, p50,
           p90, mx, bytes / p50 / 1e3, (double)grid * bytes / p50 / 1e6, 1.0 / quantile(npc, 0.5));
    fflush(stdout);
}

static void pingpong(void)
{
    unsigned *flags;
    unsigned long long *ns, h[2];
    const int n = 20000;
    CK(cudaMalloc(&flags, 256));
    CK(cudaMalloc(&ns, sizeof h));
    for (int k = 0; k < 3; k++) {
        CK(cudaMemset(flags, 0, 256));
        pingpong_kernel<<<2, 32>>>(flags, n, ns);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(h, ns, sizeof h, cudaMemcpyDeviceToHost));
        printf("{\"probe\": \"pingpong\", \"round_trips\": %d, \"ns_per_round_trip\": %.1f, "
               "\"ns_one_way\": %.1f}\n",
               n, (double)h[0] / n, (double)h[0] / n / 2);
    }
    CK(cudaFree(flags));
    CK(cudaFree(ns));
}

/* Bulk copies of 192 KB (X of 96 rows at K 1024) by size, by how many threads issue them and on
 * how many barriers, against cp.async from every thread and one copy of the whole slice (the
 * experiments README's first table: calls 3 and 4). */
static void sweep_spread(const buffers &bf, int sms)
{
    const uint32_t x = 192 << 10;
    const struct { uint32_t chunk; int issuers, one_bar; } spreads[] = {
        {512, 1, 1}, {512, 32, 1}, {512, 128, 1}, {2048, 1, 1}, {2048, 32, 1}, {2048, 96, 1}, {2048, 96, 0},
        {4096, 1, 0}, {8192, 1, 1}, {8192, 24, 1}, {8192, 24, 0}, {16384, 12, 1}, {x, 1, 1}};
    for (int g : {1, sms}) {
        for (auto sp : spreads)
            run(bf, SHARED, g, 1, x, sp.chunk, MAX_DEPTH, sp.issuers, sp.one_bar);
        run(bf, CPASYNC, g, 1, x, 16, 1);
    }
}

/* Each SM its own bytes in L2, multicast in clusters, and streams from DRAM through a ring of
 * copies in flight (calls 2 and 3), then a weight tile of the small split kernel: 32 rows of
 * 512 bytes (attention out, K / 4) from DRAM, as row copies and as one copy (call 4). */
static void sweep_sources(const buffers &bf, int sms)
{
    for (int iss : {1, 12})
        run(bf, L2, sms, 1, 192 << 10, 16384, MAX_DEPTH, iss, 0);
    for (uint32_t x : {48u << 10, 192u << 10})
        for (int cl : {2, 4})
            if (sms % cl == 0)
                run(bf, MCAST, sms / cl * cl, cl, x, 16384, MAX_DEPTH);
    const struct { uint32_t chunk; int depth; } rings[] = {{4096, 4}, {16384, 4}, {32768, 4}, {65536, 3}};
    for (auto rg : rings)
        for (int g : {1, 66, sms})
            run(bf, DRAM, g, 1, 1u << 20, rg.chunk, rg.depth);
    for (int iss : {1, 32})
        run(bf, DRAM_SPREAD, sms, 1, 16 << 10, 512, MAX_DEPTH, iss, 1);
    run(bf, DRAM_SPREAD, sms, 1, 16 << 10, 16 << 10, MAX_DEPTH, 1, 1);
}

/* X just written by other SMs, against the same bytes read before: 21-32 KB of X took ~1.3 us to
 * reach each SM in the persistent probe (~25 GB/s an SM) where L2-resident bytes came at 120-180
 * (persistent/, call 6). Whole-slice and 16 KB bulk copies, cp.async from every thread, and
 * multicast in clusters of 2 and 4 (the L2 asked once a cluster), at 32 and 192 KB. */
static void sweep_fresh(const buffers &bf, int sms)
{
    for (uint32_t x : {32u << 10, 192u << 10})
        for (int fresh : {0, 1}) {
            for (int g : {1, sms}) {
                run(bf, SHARED, g, 1, x, 16384, MAX_DEPTH, 12, 1, fresh);
                run(bf, CPASYNC, g, 1, x, 16, 1, 1, 0, fresh);
            }
            for (int cl : {2, 4})
                if (sms % cl == 0)
                    run(bf, MCAST, sms / cl * cl, cl, x, 16384, MAX_DEPTH, 1, 0, fresh);
        }
}

int main(int argc, char **argv)
{
    const bool fresh_only = argc > 1 && !strcmp(argv[1], "fresh");
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    buffers bf;
    bf.big_bytes = (size_t)p.l2CacheSize * 80;
    CK(cudaMalloc(&bf.big, bf.big_bytes));
    CK(cudaMemset(bf.big, 1, bf.big_bytes));
    CK(cudaMalloc(&bf.fresh, (size_t)REPS * SMEM_MAX));
    bf.sms = p.multiProcessorCount;
    CK(cudaMalloc(&bf.cycles, sizeof(unsigned long long) * REPS * p.multiProcessorCount));
    CK(cudaMalloc(&bf.npc, sizeof(double) * p.multiProcessorCount));
    CK(cudaFuncSetAttribute(ingest_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_MAX + BARS_BYTES));
    printf("{\"device\": \"%s\", \"sms\": %d, \"l2_bytes\": %d}\n", p.name, p.multiProcessorCount, p.l2CacheSize);
    sweep_fresh(bf, p.multiProcessorCount);
    if (!fresh_only) {
        pingpong();
        sweep_spread(bf, p.multiProcessorCount);
        sweep_sources(bf, p.multiProcessorCount);
    }
    CK(cudaFree(bf.big));
    CK(cudaFree(bf.fresh));
    CK(cudaFree(bf.cycles));
    CK(cudaFree(bf.npc));
    return 0;
}
