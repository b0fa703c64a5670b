/*
 * cutlass_common.cuh - what the two CUTLASS probes (bench/cutlass_probe.cu,
 * bench/cutlass_epilogue_probe.cu) share: the launch interface and CUTLASS's parameter
 * checks (the rest is bench/probe_common.cuh).
 */
#ifndef LAYAD_CUTLASS_COMMON_CUH
#define LAYAD_CUTLASS_COMMON_CUH

#include "bench/probe_common.cuh" /* shapes, fills, glue, graph_us */
#include "cutlass/cutlass.h"

/* One launchable GEMM: its parameters (tensor maps included) encoded before capture. */
struct Launch {
    virtual ~Launch() {}
    virtual void run(cudaStream_t st, bool pdl) = 0;
};

/* A CUTLASS GemmUniversalAdapter's parameters for args (no workspace), or exit with why. */
template <class G> static typename G::Params cutlass_params(const typename G::Arguments &args, const char *what)
{
    G g;
    if (g.can_implement(args) != cutlass::Status::kSuccess || G::get_workspace_size(args) != 0 ||
        g.initialize(args, nullptr) != cutlass::Status::kSuccess) {
        fprintf(stderr, "cutlass: cannot run %s\n", what);
        exit(1);
    }
    return g.params();
}

template <class G> static void cutlass_run(typename G::Params &params, cudaStream_t st, bool pdl)
{
    if (G::run(params, st, nullptr, pdl) != cutlass::Status::kSuccess) {
        fprintf(stderr, "cutlass: run failed\n");
        exit(1);
    }
}

#endif
