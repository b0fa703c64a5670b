/*
 * cpu.h - the exact fp32 forward on the host: encoder + decision head.
 *
 * A laya_backend (model/backend/rows.h) built on the CPU kernels (kernels/cpu.h). At
 * create every weight is converted once to fp32 into one arena, RoPE tables are
 * built for both thetas, and one activation arena is sized for max_rows rows of
 * cfg.max_len tokens (T = max_rows * max_len token slots). forward() walks the
 * rows in order, in packs of at most max_rows rows and T tokens laid back to
 * back (model/backend/batching.h: no padding inside a pack); a single row may
 * use all T slots. Nothing is allocated on the request path.
 *
 * Results do not depend on the batch: every kernel computes a row's outputs
 * from that row alone in a fixed order, so a row's logits are bit-identical
 * whether it runs alone or packed with others, at any place in the pack.
 *
 * Threading: one thread calls forward at a time; the kernels inside use
 * `threads` OpenMP threads (<= 0: the OpenMP default).
 */
#ifndef LAYAD_BACKEND_CPU_H
#define LAYAD_BACKEND_CPU_H

#include "model/checkpoint/checkpoint.h"
#include "model/base/error.h"
#include "model/backend/rows.h"

/* Creates the CPU backend over an open checkpoint (which must outlive nothing:
 * the backend copies what it needs). Returns NULL with err set on failure
 * (max_rows < 1, out of memory, unsupported geometry). */
laya_backend *cpu_backend_create(const laya_checkpoint *ck, int max_rows, int threads, layad_error *err);

#endif
