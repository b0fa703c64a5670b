/*
 * backends.h - the backends and workers of `layad serve` (backends.c).
 */
#ifndef LAYAD_SERVER_BACKENDS_H
#define LAYAD_SERVER_BACKENDS_H

#include "model/base/error.h"
#include "model/checkpoint/checkpoint.h"
#include "server/daemon/app.h"
#include "server/daemon/config.h"

/* Creates one worker on app->sched per device that cfg selects (CUDA when device = cuda,
 * or auto with a visible device; else CPU), each holding one warmed backend per model of
 * app->models (its own buckets and graphs; all resident), fills app's device_kind,
 * device_desc, devices_json and dtype, and publishes the model and device labels to the
 * metrics. *n_cuda: the CUDA workers' count, set once they all started (untouched on CPU).
 * Logs progress; on failure err says why (workers added so far stay with the scheduler). */
int backends_build(serve_app *app, const serve_config *cfg, int *n_cuda, layad_error *err);

#endif
