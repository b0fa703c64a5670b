/*
 * backend_cuda.h - the GPU forward: encoder + decision head on one CUDA device.
 *
 * A laya_backend (model/backend/rows.h) whose forward pads the rows into a token
 * bucket and replays one CUDA graph per bucket shape:
 *
 *   rows   -> padded to a power of two (<= max_batch_rows); padding rows have
 *             length 0 and change nothing;
 *   tokens -> a multiple of 16 up to 256, of 64 beyond (<= max_len);
 *   slots  -> marker slots K padded to a power of two >= 8 (<= max_k).
 *
 * Rows of one call are sorted by length and cut into buckets of at most
 * max_batch_rows rows so that short rows do not pay for long ones; results go
 * back in the caller's order. Graphs are captured at create for the warm-up
 * list and on first use for other shapes, and kept in an LRU of graph_cache
 * entries.
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

#define CUDA_MAX_WARM 64 /* warm-up shapes remembered in cuda_backend_info */

typedef struct cuda_bucket {
    int rows;   /* padded rows: a power of two */
    int tokens; /* padded tokens per row */
    int slots;  /* padded marker slots */
} cuda_bucket;

typedef struct cuda_backend_opts {
    int device;         /* CUDA device ordinal (after CUDA_VISIBLE_DEVICES) */
    int dtype;          /* enum cuda_dtype; default fp16 */
    int max_batch_rows; /* largest bucket in rows (rounded up to a power of two); default 64 */
    int max_len;        /* largest bucket in tokens; 0: the checkpoint's max_len */
    int max_k;          /* marker slots per row; 0: the head budget (min(head_max_len, max_len)) */
    const cuda_bucket *warm; /* shapes captured at create ({rows, tokens}, slots 0 = 8) */
    int n_warm;
    int graph_cache;    /* LRU size (graphs kept); default 32, >= 1 */
    int use_graphs;     /* 1 (default): replay graphs; 0: launch every kernel (eager) */
    int branch16;       /* 0 (default): the residual-branch projections (attention out,
                           MLP out, head out_proj/linear2) write fp32 for the fp32 add;
                           1: they write the serving dtype (half the traffic of those
                           tensors, one more rounding per residual update) */
    int gemm_tune;      /* 1 (default): each cuBLASLt shape times up to 8 of the heuristic's
                           algorithms at warm-up (or first use) and keeps the fastest
                           (kn_gemm_ctx_set_tuning); 0: the heuristic's first, the same
                           in every process */
} cuda_backend_opts;

/* Defaults: device 0, fp16, 64 rows, checkpoint max_len, head-budget K, no
 * warm-up list, 32 graphs, graphs on, fp32 residual branches,
 * cuBLASLt tuning on. */
void cuda_backend_opts_default(cuda_backend_opts *o);

/* Programmatic dependent launch of the backend's own kernels (on by default;
 * kernels/cuda.h kn_set_pdl). Process-wide; for the benchmark's comparison. */
void cuda_backend_set_pdl(int on);

/* Parses "fp16" / "bf16" into *dtype; -1 on anything else. */
int cuda_dtype_parse(const char *s, int *dtype);
const char *cuda_dtype_name(int dtype);

/* Parses a warm-up list "1x128,8x512,..." (rows x tokens) into out[0..cap);
 * returns the count or -1 (err set) on a malformed entry or overflow. */
int cuda_bucket_list_parse(const char *s, cuda_bucket *out, int cap, layad_error *err);

/* The bucket a set of n rows of longest length max_len and largest K would
 * run in (slots included); what the scheduler uses to cut batches. */
cuda_bucket cuda_bucket_for(int n, int max_len, int K);
int cuda_bucket_tokens(int len); /* multiple of 16 up to 256, of 64 beyond */
int cuda_bucket_rows(int n);     /* next power of two */

/* Number of visible CUDA devices; 0 without CUDA or without a driver. */
int cuda_device_count(void);

/* Uploads the checkpoint's weights to device o->device, allocates the arenas
 * and staging, chooses the cuBLASLt algorithms and captures the warm-up
 * graphs. NULL on failure (err set, status 500, everything released). The
 * checkpoint may be closed after create returns: nothing keeps pointing into
 * its map. */
laya_backend *cuda_backend_create(const laya_checkpoint *ck, const cuda_backend_opts *o,
                                  layad_error *err);

/* Forward with an explicit mode (use_graph 0: eager launches; 1: graph replay),
 * same contract as ops->forward. Parity and check compare the two. */
int cuda_backend_forward_mode(laya_backend *b, const laya_row *rows, int n, int K,
                              float *logits, float *act, int use_graph, layad_error *err);

typedef struct cuda_backend_stats {
    long long forwards;        /* buckets run */
    long long graph_hits;      /* bucket found in the LRU */
    long long graph_misses;    /* bucket captured on first use */
    long long graph_evictions; /* graphs dropped by the LRU */
    int graphs_cached;
    long long rows, tokens;    /* real rows / real tokens run */
    long long padded_tokens;   /* rows * tokens of the buckets run */
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
    size_t act_bytes;          /* device activation arena */
    size_t workspace_bytes;    /* cuBLASLt workspace */
    size_t pinned_bytes;       /* host staging */
    int max_batch_rows, max_len, max_k, graph_cache;
    double upload_ms;          /* convert + copy of the weights */
    double init_ms;            /* everything in create but warm-up capture */
    int n_warm;
    cuda_bucket warm[CUDA_MAX_WARM];
    double warm_capture_ms[CUDA_MAX_WARM];
} cuda_backend_info;

/* Fills *info; mem_free is read now. 0, or -1 with err set. */
int cuda_backend_info_get(laya_backend *b, cuda_backend_info *info, layad_error *err);

#endif
