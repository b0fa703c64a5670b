/*
 * cuda.h - the GPU forward: encoder + decision head on one CUDA device.
 *
 * A laya_backend (model/backend/rows.h) whose forward packs the rows back to
 * back (model/backend/batching.h) into a token bucket and replays the bucket's
 * CUDA graph. A graph depends on the bucket's token capacity alone (rows and
 * gathered slots are sized from it), so the whole bucket set, about 50 shapes
 * up to max_tokens, is tuned and captured at create, before the daemon says
 * it is ready; calls are cut into packs of at most max_batch_rows rows and
 * max_tokens tokens. A bucket left out of the warm-up list runs eagerly on
 * first use (heuristic GEMM algorithms), and its graph is captured by
 * ops->idle, between batches, so no request waits for a capture.
 *
 * Precision: weights once on the device in fp16 or bf16 (the checkpoints store
 * F16; bf16 is a rounding of those); GEMMs accumulate in fp32; the residual
 * stream, LayerNorm statistics, softmax and everything from the scorer on are
 * fp32. Memory: one weight arena and one activation arena (largest bucket),
 * cuBLASLt workspace and pinned host staging, all allocated at create; the
 * forward allocates nothing and synchronizes once, after the copy back.
 *
 * Threading: one thread calls forward at a time (the device's GPU worker);
 * cuda_backend_stats and cuda_backend_info may be read from any thread.
 *
 * Without CUDA (LAYAD_CUDA=0) the same header compiles; cuda_backend_create
 * fails with a clear error and cuda_device_count returns 0.
 */
#ifndef LAYAD_BACKEND_CUDA_H
#define LAYAD_BACKEND_CUDA_H

#include <stddef.h>

#include "model/checkpoint/checkpoint.h"
#include "model/base/error.h"
#include "model/backend/rows.h"

enum cuda_dtype { CUDA_DT_FP16 = 0, CUDA_DT_BF16 = 1 };

#define CUDA_MAX_WARM 128/* warm-up buckets remembered in cuda_backend_info */

/* A request shape: rows x tokens per row (benchmarks and warm-up lists say
 * "1x83,8x512"); slots is the marker count per row (0: 1). */
typedef struct cuda_bucket {
    int rows;
    int tokens;
    int slots;
} cuda_bucket;

/* Progress of create's warm-up: called after each bucket (done of total). */
typedef void (*cuda_progress_fn)(void *arg, int done, int total, int cap_tokens, double ms);

/* The encoder's own-kernel paths in a bucket, as bits: the split residual-branch products on
 * kn_gemm_split_small (small_gemm_tokens), Wqkv and Wi with RoPE / GeGLU in their epilogue
 * (fused_proj_tokens); 0 is cuBLASLt plus the separate kernels. */
enum { CUDA_PATH_SMALL = 1, CUDA_PATH_FUSED = 2, CUDA_PATHS = 4 };
enum { CUDA_PATH_ROUNDS_MAX = 7 }; /* cuda_backend_opts.path_rounds: the default and the most */
enum { CUDA_PATH_REPLAYS = 10 };   /* cuda_backend_opts.path_replays: the default */

typedef struct cuda_backend_opts {
    int device;         /* CUDA device ordinal (after CUDA_VISIBLE_DEVICES) */
    int dtype;          /* enum cuda_dtype; default fp16 */
    int max_batch_rows; /* rows per pack; default 64 */
    int max_tokens;     /* tokens per pack (the largest bucket); 0: max_batch_rows x max_len */
    int max_len;        /* longest row; 0: the checkpoint's max_len */
    const cuda_bucket *warm; /* warm only the buckets these shapes run in; NULL: every bucket */
    int n_warm;
    int use_graphs;     /* 1 (default): replay graphs; 0: launch every kernel (eager) */
    int branch16;       /* 0 (default): the residual-branch projections (attention out,
                           MLP out, head out_proj/linear2) write fp32 for the fp32 add;
                           1: they write the serving dtype (half the traffic of those
                           tensors, one more rounding per residual update) */
    int residual_epilogue; /* 1 (default): the encoder's attention-out and MLP-out GEMMs add
                              into the fp32 residual stream in their epilogue (KN_EPI_ACC), and
                              the next LayerNorm reads only the stream; 0: they write the branch
                              and the LayerNorm adds it (one more pass over it). With branch16
                              the branch is 16-bit and the LayerNorm always adds it. */
    int split_tokens;   /* with residual_epilogue: in buckets of at most this many tokens
                           (default 128; 0: never) the attention-out and MLP-out GEMMs split
                           K into 4 fp32 partial products (kn_gemm_split) that the next
                           LayerNorm sums into the residual stream (kn_layernorm_parts),
                           instead of one accumulating GEMM; a row's last bits then depend
                           on whether its pack is split */
    int small_gemm_tokens; /* in split buckets of at most this many tokens (default 64; 0: never)
                              those partial products run on our own kernel
                              (kn_gemm_split_small), not cuBLASLt's: a layer's chain 2.6 us
                              faster at 16 rows, 1.9 at 32, 0.85 at 48, 0.5 slower at 64
                              (bench/results/experiments/wide/); with the kernels before it
                              triggering early, up to 64 the forward at 1x60 -2.5% on an H100
                              (early-trigger/call3-h100/) */
    int fused_proj_tokens; /* in buckets of at most this many tokens (default 48; 0: never; at
                              most KN_PROJ_SMALL_MAXM) the encoder's Wqkv and Wi run on our
                              own kernel with RoPE and GeGLU in their epilogue
                              (kn_proj_small_rope / _geglu): two launches fewer a layer. On
                              the H200 the forward -3.5% at 1x16 (before Wi's blocks in one
                              wave), +0.9% at 1x30 and +8% at 1x40 with it up to 32 / 48
                              (bench/results/experiments/bulk-x/); since the kernels before
                              it trigger early, up to 32 the forward at 1x30 -8.5% on an H100
                              (early-trigger/call3-h100/); since their bulk copies go round
                              the warps, up to 48 the forward at 1x40 -2% on an H100
                              (bulk-spread/call2-h100/) */
    int path_tune_tokens; /* buckets of at most this many tokens (default 0: none) choose their
                              paths by timing at warm-up: each combination of the two own-kernel
                              paths above that applies there (CUDA_PATH_*) is captured and timed,
                              and the fastest is kept; the thresholds' choice stays unless
                              another is more than 1% faster. Answers may then differ in their
                              last bits between processes, as with gemm_tune. Timed only with
                              graphs on. */
    int path_rounds;      /* that timing's interleaved rounds, each path's median kept (default
                             CUDA_PATH_ROUNDS_MAX, the most; fewer only where time is scarce,
                             as under compute-sanitizer) */
    int path_replays;     /* graph replays a path's round averages (default CUDA_PATH_REPLAYS) */
    int att_pack_tokens; /* buckets of at most this many tokens (default 1024; 0: none) whose
                              capacity runs the attention with one group of warps a block also
                              capture a graph with two groups (kn_attention_grouped), replayed
                              for packs of few query tiles (a long row alone): the two halves of
                              each tile's keys side by side. Both forms give the same bits. */
    int att_wo_tokens;   /* buckets of at most this many tokens (default 48; 0: none) run a pack of
                              at most kn_attention_wo_tiles query tiles (a row of up to 128
                              tokens) with the attention and its out-projection in one launch
                              (kn_attention_wo), one fp32 part a head for the LayerNorm after
                              it, in place of the attention and the split out-projection */
    int gemm_tune;      /* 1 (default): each cuBLASLt shape times up to 8 of the heuristic's
                           algorithms at warm-up and keeps the fastest
                           (kn_gemm_ctx_set_tuning); 0: the heuristic's first, the same
                           in every process */
    int copy_timing;    /* 1 (default): events around the input and output copies, so
                         * each forward reports its h2d / d2h times (laya_fwd_timing) */
    int pdl;            /* 1 (default): programmatic dependent launch of our kernels
                           (kernels/cuda.h kn_stream); 0: plain launches (the benchmark's
                           same-run comparison) */
    const char *tuning_cache; /* file of tuned GEMM algorithms (read at create, written after
                                 warm-up); NULL: none */
    cuda_progress_fn progress; /* NULL: quiet */
    void *progress_arg;
} cuda_backend_opts;

/* Defaults: device 0, fp16, 64 rows, max_tokens 0, checkpoint max_len, every
 * bucket warmed, graphs on, fp32 residual branches, tuning on, PDL on, copy
 * timing on. */
void cuda_backend_opts_default(cuda_backend_opts *o);

/* The paths (CUDA_PATH_* bits) the fixed thresholds give a bucket of T tokens. */
int cuda_path_fixed(const cuda_backend_opts *o, int T);

/* "cublaslt", "small-split", "fused-proj" or "small-split+fused-proj" (bits 0-3), else "?". */
const char *cuda_path_name(int path);

/* Of n timed paths (path[i] took ms[i]), the index of the one to keep: that of dflt unless
 * another is faster than it by more than the fraction margin, then the fastest; the fastest
 * when dflt was not timed. Ties keep the earlier index. */
int cuda_path_pick(const int *path, const double *ms, int n, int dflt, double margin);

/* Parses "fp16" / "bf16" into *dtype; -1 on anything else. */
int cuda_dtype_parse(const char *s, int *dtype);
const char *cuda_dtype_name(int dtype);

/* Parses a shape list "1x128,8x512,..." (rows x tokens) into out[0..cap);
 * returns the count or -1 (err set) on a malformed entry or overflow. */
int cuda_bucket_list_parse(const char *s, cuda_bucket *out, int cap, layad_error *err);

/* The token capacity (bucket) a pack of `tokens` real tokens in `rows` rows
 * runs in; -1 past the largest. */
int cuda_backend_capacity(laya_backend *b, long tokens, int rows);

/* Number of visible CUDA devices; 0 without CUDA or without a driver. */
int cuda_device_count(void);

/* Uploads the checkpoint's weights to device o->device, allocates the arenas
 * and staging, chooses the cuBLASLt algorithms and captures the warm-up
 * graphs. NULL on failure (err set, status 500, everything released). The
 * checkpoint may be closed after create returns: nothing keeps pointing into
 * its map. */
laya_backend *cuda_backend_create(const laya_checkpoint *ck, const cuda_backend_opts *o,
                                  layad_error *err);

/* Forward with an explicit mode (use_graph 0: eager launches; 1: graph replay,
 * eager when the bucket has no graph yet), same contract as ops->forward.
 * Parity and check compare the two. */
int cuda_backend_forward_mode(laya_backend *b, const laya_row *rows, int n, int K,
                              float *logits, float *act, int use_graph, layad_error *err);

typedef struct cuda_backend_stats {
    long long forwards;        /* packs run */
    long long graph_hits;      /* pack replayed from its bucket's graph */
    long long graph_misses;    /* pack run eagerly: its bucket had no graph yet */
    long long late_captures;   /* graphs captured after create (by ops->idle) */
    long long att_pack_runs;   /* packs run with the two-group attention of att_pack_tokens */
    int graphs_cached;
    long long rows, tokens;    /* real rows / real tokens run */
    long long padded_tokens;   /* bucket capacities of the packs run */
} cuda_backend_stats;

void cuda_backend_stats_get(laya_backend *b, cuda_backend_stats *s);

typedef struct cuda_backend_info {
    int device;
    char name[256];            /* "NVIDIA H200" */
    char pci_bus_id[32];
    int sm_major, sm_minor, sm_count;
    size_t mem_total, mem_free; /* at the time of the call (cudaMemGetInfo) */
    int dtype;
    size_t weight_bytes;       /* device weight arena */
    size_t act_bytes;          /* device activation arena (largest bucket) */
    size_t workspace_bytes;    /* cuBLASLt workspace */
    size_t pinned_bytes;       /* host staging */
    int max_batch_rows, max_tokens, max_len, n_buckets;
    double upload_ms;          /* convert + copy of the weights */
    double init_ms;            /* everything in create but warm-up */
    double warm_ms;            /* warm-up: tuning, eager run and capture of every bucket */
    int tuning_loaded;         /* GEMM shapes taken from the tuning cache */
    char tuning_warning[256];  /* why the cache was ignored, or "" */
    int n_warm;
    int warm_tokens[CUDA_MAX_WARM]; /* bucket capacities warmed, in order */
    double warm_capture_ms[CUDA_MAX_WARM];
    int warm_nodes[CUDA_MAX_WARM]; /* nodes of the bucket's graph (its first gathered class; 0 without
                                      graphs): the forward's launches and timing events */
    int warm_path[CUDA_MAX_WARM];  /* the paths the bucket runs (CUDA_PATH_* bits of those that
                                      apply there) */
    double warm_path_ms[CUDA_MAX_WARM][CUDA_PATHS]; /* path_tune_tokens: each path's median
                                      forward at warm-up, by its bits (0: not timed) */
} cuda_backend_info;

/* Fills *info; mem_free is read now. 0, or -1 with err set. */
int cuda_backend_info_get(laya_backend *b, cuda_backend_info *info, layad_error *err);

#endif
