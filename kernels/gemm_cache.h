/*
 * gemm_cache.h - the cuBLASLt algorithms chosen by GEMM tuning, kept in a file
 * so that a restarted daemon does not time every shape again.
 *
 * Host C with no CUDA header (it builds and is tested in the CPU-only and
 * sanitizer builds); kernels/gemm_lt.cu fills the environment key and turns
 * records into plans (kn_gemm_ctx_load_tuning / _save_tuning in
 * kernels/cuda.h).
 *
 * Why a file keyed by the environment: a cublasLtMatmulAlgo_t is 8 opaque
 * uint64 that only the cuBLASLt build and GPU that produced it can interpret,
 * and which candidate is fastest depends on the GPU and the library. A file
 * written under another GPU, driver, cuBLASLt or CUDA runtime is ignored as a
 * whole (with a warning), and gemm_lt.cu still checks every algorithm with
 * cublasLtMatmulAlgoCheck before trusting it.
 *
 * The file is text, one line each, so that it can be read and diffed:
 *
 *   layad-gemm-tuning 1 driver=13000 runtime=13000 cublaslt=130100 id=GPU-<uuid> gpu=NVIDIA H200
 *   records 2
 *   rec <wdt> <ydt> <M> <N> <K> <epi> <has_bias> <time_ns> <algo word 0..7 as 16 hex digits each>
 *   rec ...
 *   crc32 <8 hex digits over every byte before this line>
 *
 * Records are written sorted by key, so equal caches give equal files. Nothing
 * here allocates on the request path: load and save run at start-up and after
 * warm-up. Loading never fails the caller for a bad file: a missing file is
 * silent, a corrupt or foreign one is ignored with a one-line warning.
 */
#ifndef LAYAD_KERNELS_GEMM_CACHE_H
#define LAYAD_KERNELS_GEMM_CACHE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KN_GEMM_CACHE_MAX 4096 /* records per file (the GPU backend's plan capacity) */
#define KN_GEMM_ALGO_WORDS 8   /* sizeof(cublasLtMatmulAlgo_t) / 8 */

/* What an algorithm is valid for. Strings hold printable ASCII only (others
 * become '?', and spaces in id '_', when a cache is initialized). */
typedef struct kn_gemm_env {
    char gpu[256];     /* device name (cudaDeviceProp.name, as long) */
    char id[64];       /* "GPU-<uuid>", or the PCI id when there is no UUID */
    int driver;        /* cudaDriverGetVersion */
    int runtime;       /* cudaRuntimeGetVersion */
    uint64_t cublaslt; /* cublasLtGetVersion */
} kn_gemm_env;

/* The shape of a plan, as gemm_lt.cu keys them: dtypes are kn_dtype values
 * (X has W's dtype on the cuBLASLt path), epi the epilogue given to cuBLASLt
 * (enum kn_epilogue, never GELU: that is a separate pass) in its low byte and,
 * for a split plan (kn_gemm_split), the part count in its high byte. */
#define KN_GEMM_EPI_MAX 0xffff
typedef struct kn_gemm_key {
    int32_t wdt, ydt;
    int32_t M, N, K;
    int32_t epi;
    int32_t has_bias;
} kn_gemm_key;

typedef struct kn_gemm_rec {
    kn_gemm_key key;
    uint64_t algo[KN_GEMM_ALGO_WORDS]; /* the cublasLtMatmulAlgo_t's bytes */
    uint64_t time_ns;                  /* its measured time per launch */
} kn_gemm_rec;

/* A set of records for one environment; at most one record per key. */
typedef struct kn_gemm_cache {
    kn_gemm_env env;
    kn_gemm_rec *rec; /* [cap], owned */
    int n, cap;
} kn_gemm_cache;

/* An empty cache for env (copied, sanitized). Allocates nothing. */
void kn_gemm_cache_init(kn_gemm_cache *c, const kn_gemm_env *env);
/* Frees the records; c is empty afterwards and can be reused. */
void kn_gemm_cache_free(kn_gemm_cache *c);

/* The record of key k, or NULL. The pointer is valid until the next put or remove. */
const kn_gemm_rec *kn_gemm_cache_find(const kn_gemm_cache *c, const kn_gemm_key *k);

/* Adds r, or replaces the record with r's key. -1 (c unchanged) when the key
 * is out of the file's ranges (dimensions >= 1, dtypes 0..255, epi 0..KN_GEMM_EPI_MAX,
 * has_bias 0/1), the cache already holds KN_GEMM_CACHE_MAX records or memory
 * runs out; else 0. */
int kn_gemm_cache_put(kn_gemm_cache *c, const kn_gemm_rec *r);

/* Removes the record of key k if there is one. */
void kn_gemm_cache_remove(kn_gemm_cache *c, const kn_gemm_key *k);

/*
 * Reads the file at path. When it was written for c's environment and is
 * intact, its records replace c's and their count is returned, warn = "". A
 * missing file returns 0 silently (warn = "", c unchanged). Any other problem
 * (unreadable, truncated, bad checksum, unknown format, foreign environment,
 * too many records, duplicate keys, out of memory) leaves c unchanged, returns
 * 0 and writes a one-line reason naming the file into warn (the caller logs
 * it). warn may be NULL when warn_len is 0.
 */
int kn_gemm_cache_load(kn_gemm_cache *c, const char *path, char *warn, size_t warn_len);

/*
 * Writes c to path atomically: a temporary file in the same directory, fsync,
 * mode 0644, rename over path, fsync of the directory; a failure leaves path as
 * it was and no temporary behind. Returns the number of records written, or -1
 * with a one-line reason in err.
 */
int kn_gemm_cache_save(const kn_gemm_cache *c, const char *path, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
