/*
 * build_info.h - what this binary is: the layad version, the git commit it was
 * built from, and the CUDA runtime and cuBLAS it runs with.
 *
 * `layad --version` prints it and /metrics exports it as
 * laya_build_info{version,commit,cuda,cublas} 1. The commit is baked in at
 * build time (the Makefile passes -DLAYAD_COMMIT for this file only, and
 * rebuilds it when HEAD moves); "unknown" outside a git checkout. The CUDA
 * and cuBLAS versions are those of the libraries loaded at run time
 * (cudaRuntimeGetVersion, cublasGetProperty: neither needs a GPU nor
 * initializes the driver), "none" in a CPU-only build.
 */
#ifndef LAYAD_SERVER_BUILD_INFO_H
#define LAYAD_SERVER_BUILD_INFO_H

#define LAYAD_VERSION "0.2.0"

typedef struct build_info {
    const char *version; /* LAYAD_VERSION */
    const char *commit;  /* abbreviated git commit, or "unknown" */
    char cuda[16];       /* CUDA runtime, e.g. "13.0"; "none" without CUDA */
    char cublas[24];     /* cuBLAS, e.g. "13.0.2"; "none" without CUDA */
} build_info;

/* Fills *out. Never fails: a version the libraries do not report reads "unknown". */
void build_info_get(build_info *out);

#endif
