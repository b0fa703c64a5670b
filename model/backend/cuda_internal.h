/*
 * cuda_internal.h - the CUDA backend's state, shared by its files (not an API):
 *
 *   cuda_opts.c     options and names (built with or without CUDA)
 *   cuda_stub.c     the API without CUDA: create fails clearly (built only then)
 *   cuda_weights.c  weight upload, activation arena, pinned staging
 *   cuda_forward.c  one pack: staging, the encoder and head enqueued, results out
 *   cuda_graphs.c   one graph per bucket: tuning, capture, warm-up, late capture
 *   cuda_paths.c    a small bucket's own-kernel paths, chosen by timing at warm-up
 *   cuda_create.c   create / destroy / stats / info
 */
#ifndef LAYAD_CUDA_INTERNAL_H
#define LAYAD_CUDA_INTERNAL_H

#include <cuda_runtime.h>

#include "kernels/cuda.h"
#include "model/backend/batching.h"
#include "model/backend/cuda.h"

#define CUDA_ALIGN 256

#define CU(call)                                                                        \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess)                                                          \
            return layad_fail(err, 500, "cuda backend: %s:%d: %s: %s", __FILE__,        \
                              __LINE__, #call, cudaGetErrorString(e_));                 \
    } while (0)

/* A kernels/ launcher failed: its own message says which statement. */
#define KN(call)                                                                        \
    do {                                                                                \
        if ((call) != 0)                                                                \
            return layad_fail(err, 500, "cuda backend: %s:%d: %s: %s", __FILE__,        \
                              __LINE__, #call, kn_cuda_last_error());                   \
    } while (0)

typedef struct dev_layer {
    const float *attn_norm; /* NULL on layer 0 */
    const void *wqkv, *wo, *wi, *wo2;
    const float *mlp_norm;
} dev_layer;

typedef struct dev_head_layer {
    const void *in_w, *out_w, *l1_w, *l2_w;
    const void *in_b, *l1_b;  /* serving dtype, out_b/l2_b: branch dtype; cuBLASLt takes */
    const void *out_b, *l2_b; /* the bias in the output's dtype: no per-call conversion */
    const float *n1_w, *n1_b, *n2_w, *n2_b;
} dev_head_layer;

typedef struct dev_weights {
    const void *tok_emb; /* emb_dt */
    const float *emb_norm, *final_norm, *type_emb;
    dev_layer enc[LAYA_MAX_LAYERS];
    dev_head_layer head[LAYA_MAX_HEAD_LAYERS];
    const float *sc0_w, *sc0_b, *sc1_b, *sc3_w, *sc3_b, *act0_b, *act2_b;
    const void *sc1_w, *act0_w, *act2_w; /* tail_dt */
} dev_weights;

/* Device activation buffers, sized for the largest bucket (T token slots,
 * G = T + R gathered slots, R rows); a pack of a smaller class uses their start. */
typedef struct dev_acts {
    float *res;          /* [T, D] fp32 residual stream */
    void *xn;            /* [T, D] normalized GEMM input */
    void *qkv;           /* [T, 3D] */
    void *att;           /* [T, D] */
    void *o;             /* [T, D] projection outputs */
    void *u;             /* [T, max(2F, 4D)] Wi output / head FFN hidden */
    void *g;             /* [T, F] GeGLU output */
    float *hg;           /* [G, D] fp32 residual of the gathered rows */
    void *attg, *og, *xg, *f2g; /* [G, D] */
    void *fg;            /* [G, 4D] */
    float *sn, *s1;      /* [G, D] fp32 scorer LN / scorer hidden */
    float *actin;        /* [R, D + 4] */
    float *a1;           /* [R, 256] */
    float *cos_g, *sin_g, *cos_l, *sin_l; /* [max_len, 32] */
    void *in;            /* device copy of the staged pack */
    void *out;           /* logits [G] then act [R, 2] */
} dev_acts;

/* Byte offsets of one pack's staged arrays (the batch_layout of its bucket)
 * in the pinned and device input buffers, and of the outputs. */
typedef struct stage_layout {
    size_t cu, ids, pos, ttype, tiles, goff, gpos, grow, gmask, in_bytes;
    size_t logits, act, out_bytes;
} stage_layout;

/* A pack's attention launches: by its bucket's capacity (kn_attention), or,
 * for a pack of few query tiles in a bucket whose capacity would take one
 * group of warps a block, two groups over att_pack_tiles tiles (the same bits;
 * cuda_backend_opts.att_pack_tokens). */
enum { CUDA_ATT_GRID, CUDA_ATT_PACK, CUDA_ATT_FORMS };

typedef struct bucket_graph {
    cudaGraphExec_t exec;
    int ready;   /* exec captured */
    int pending; /* ran eagerly; ops->idle captures it */
    int nodes;   /* nodes of its graph: every launch and timing event of the forward */
} bucket_graph;

typedef struct cuda_backend {
    laya_backend base;
    laya_config cfg;
    cuda_backend_opts o;
    cuda_bucket warm[CUDA_MAX_WARM];
    batch_policy policy;
    int dev;
    kn_stream ks;     /* the backend's stream and PDL choice */
    kn_dtype dt;      /* encoder / head-layer weights and 16-bit activations */
    kn_dtype tail_dt; /* scorer / act-head weights */
    kn_dtype emb_dt;  /* token embedding table: the checkpoint's 16-bit dtype, else dt */
    kn_dtype br_dt;   /* residual-branch projection outputs: fp32, or dt with branch16 */
    int acc;          /* encoder branches added into res by their GEMMs (residual_epilogue) */
    int D, F, H, Dh4, n_layers, n_head_layers, window;
    int Rmax, Tmax;   /* rows per pack, largest bucket */
    kn_gemm_ctx *gemm;
    int prepare_only; /* 1: gemm() prepares plans, nothing is launched */
    int bucket;       /* token slots of the bucket being enqueued (cuda_enqueue) */
    int path_now;     /* its paths (CUDA_PATH_* bits) */
    int att_now;      /* its attention form: CUDA_ATT_GRID, or CUDA_ATT_PACK (two groups a
                         block over at most att_pack_tiles query tiles) */
    int att_pack_tiles; /* kn_attention_pack_tiles: the most tiles of a CUDA_ATT_PACK pack */
    int att_wo_tiles;   /* kn_attention_wo_tiles where D takes it, else 0 */
    int att_wo_max;     /* cuda_att_wo_max: the largest bucket of the fused launch, 0 none */
    int orows;          /* rows of a->o (fp32 [orows, D]): Tmax, or more for the per-head parts
                           of buckets up to o.att_wo_tokens */
    unsigned char path[BATCH_MAX_BUCKETS]; /* each bucket's paths: the thresholds', or timed */
    void *warena;
    size_t wbytes;
    dev_weights w;
    void *aarena;
    size_t abytes;
    dev_acts a;
    unsigned char *pin_in, *pin_out; /* pinned staging, largest bucket, mapped */
    void *pin_in_dev, *pin_out_dev;  /* the same as the device addresses them */
    /* copy_timing: recorded before / after the input copy and before / after
     * the output copy, in eager runs and in every captured graph */
    cudaEvent_t ev[4];
    size_t pin_bytes;
    bucket_graph graphs[BATCH_MAX_BUCKETS][BATCH_GCLASSES][CUDA_ATT_FORMS]; /* by bucket index, gathered
                                                                              class, attention form */
    cuda_backend_stats st;
    cuda_backend_info info;
} cuda_backend;

/* cuda_weights.c */
size_t cuda_align_up(size_t x);
stage_layout cuda_stage_layout(int cap, int rows_cap, int gcap);
int cuda_upload_weights(cuda_backend *b, const laya_checkpoint *ck, layad_error *err);
int cuda_alloc_acts(cuda_backend *b, layad_error *err);

/* cuda_forward.c */
int cuda_enqueue(cuda_backend *b, int cap, int gcap, int att, layad_error *err);
int cuda_stage(cuda_backend *b, int cap, int gcap, const laya_row *rows, int n, batch_layout *l,
               layad_error *err);
int cuda_small_ok(const cuda_backend *b, int cap); /* the own split kernel would run there */
int cuda_fused_ok(const cuda_backend *b, int cap); /* the fused projections take its shapes */
int cuda_att_pack_ok(const cuda_backend *b, int cap); /* bucket cap has a CUDA_ATT_PACK form */
int cuda_pack_tiles(const cuda_backend *b, int cap);  /* the most query tiles of its CUDA_ATT_PACK packs */
int cuda_att_wo_max(const cuda_backend *b);          /* the largest bucket of the fused attention out-projection */
int cuda_run_pack(cuda_backend *b, const laya_row *rows, int n, int K, float *logits, float *act,
                  int use_graph, layad_error *err);

/* cuda_graphs.c */
int cuda_bucket_index(const cuda_backend *b, int cap);
int cuda_launch(cuda_backend *b, int cap, int gcap, int att, int use_graph, double *launch_s, layad_error *err);
int cuda_warm_eager(cuda_backend *b, int cap, int gcap, int att, layad_error *err);
int cuda_capture_exec(cuda_backend *b, int cap, int gcap, int att, cudaGraphExec_t *exec, int *nodes,
                      layad_error *err);
int cuda_warm_up(cuda_backend *b, layad_error *err);
int cuda_idle(laya_backend *base);
void cuda_graphs_destroy(cuda_backend *b);

/* cuda_paths.c: times bucket cap's paths (gathered class gcap) and keeps one in b->path;
 * ms[p] gets path p's median forward (0 where not timed). */
int cuda_choose_path(cuda_backend *b, int cap, int gcap, double ms[CUDA_PATHS], layad_error *err);
/* Paths p with the bits that change nothing in bucket cap dropped (what the bucket runs). */
int cuda_path_effective(const cuda_backend *b, int cap, int p);

#endif
