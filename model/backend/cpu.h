/*
 * backend_cpu.h - the exact fp32 forward on the host: encoder + decision head.
 *
 * A laya_backend (model/backend/rows.h) built on the CPU kernels (kernels/cpu.h). At
 * create every weight is converted once to fp32 into one arena, RoPE tables are
 * built for both thetas, and one activation arena is sized for max_rows rows of
 * cfg.max_len tokens (T = max_rows * max_len token slots). forward() walks the
 * rows in order, in chunks of at most max_rows rows whose right-padded size
 * (rows x longest row) fits T and whose padding stays within 25% of the real
 * tokens (chunks up to 256 padded tokens are exempt); a single row may use all
 * T slots. Nothing is allocated on the request path.
 *
 * Results do not depend on the batch: every kernel computes a row's outputs
 * from that row alone in a fixed order, so a row's logits are bit-identical
 * whether it runs alone or with others, padded to any length.
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

/* Lets a chunk grow while padded tokens <= ratio x real tokens (default 1.25;
 * HUGE_VAL: fill chunks by capacity only). Results do not change, only speed. */
void cpu_backend_set_max_padding(laya_backend *b, double ratio);

#endif
