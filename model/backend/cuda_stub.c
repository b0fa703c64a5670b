/*
 * cuda_stub.c - the CUDA backend's API in a build without CUDA (the Makefile
 * picks this file instead of cuda_{create,weights,forward,graphs}.c when nvcc
 * is absent): create fails with a clear error, no device is visible.
 */
#include <string.h>

#include "model/backend/cuda.h"

int cuda_device_count(void)
{
    return 0;
}

laya_backend *cuda_backend_create(const laya_checkpoint *ck, const cuda_backend_opts *o,
                                  layad_error *err)
{
    (void)ck;
    (void)o;
    layad_fail(err, 500, "cuda backend: this layad was built without CUDA (nvcc was not found "
                         "at build time); use the CPU backend (--device cpu)");
    return NULL;
}

int cuda_backend_forward_mode(laya_backend *b, const laya_row *rows, int n, int K,
                              float *logits, float *act, int use_graph, layad_error *err)
{
    (void)b, (void)rows, (void)n, (void)K, (void)logits, (void)act, (void)use_graph;
    return layad_fail(err, 500, "cuda backend: built without CUDA");
}

void cuda_backend_stats_get(laya_backend *b, cuda_backend_stats *s)
{
    (void)b;
    memset(s, 0, sizeof *s);
}

int cuda_backend_info_get(laya_backend *b, cuda_backend_info *info, layad_error *err)
{
    (void)b;
    memset(info, 0, sizeof *info);
    return layad_fail(err, 500, "cuda backend: built without CUDA");
}

int cuda_backend_capacity(laya_backend *b, long tokens, int rows)
{
    (void)b, (void)tokens, (void)rows;
    return -1;
}
