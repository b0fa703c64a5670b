/*
 * metrics.h - the Prometheus registry of the daemon (server/api/README.md, "Metrics").
 *
 * One process-wide registry, the explicitly shared object every thread writes
 * to: counters and histogram buckets are relaxed atomics (no lock on the
 * request path), label sets are fixed at start-up (endpoints, status codes,
 * rejection reasons, devices), so recording never allocates. metrics_render
 * writes the text exposition format (version 0.0.4) that `promtool check
 * metrics` accepts; the GPU snapshot families come from gpu_snapshot and are
 * appended only when NVML delivered a snapshot.
 */
#ifndef LAYAD_SERVER_METRICS_H
#define LAYAD_SERVER_METRICS_H

#include <stddef.h>

enum metrics_endpoint {
    EP_DECIDE, EP_SYSTEMONE, EP_MODELS, EP_HEALTHZ, EP_READYZ, EP_HEALTH, EP_DRAIN, EP_METRICS,
    EP_OTHER, EP_COUNT
};

enum metrics_reject {
    REJ_QUEUE_FULL, REJ_DRAINING, REJ_DEADLINE, REJ_BODY_TOO_LARGE, REJ_UNAUTHORIZED, REJ_COUNT
};

enum metrics_hist {
    H_REQUEST_DURATION, H_QUEUE_WAIT, H_TOKENIZE, H_BATCH_ROWS, H_BATCH_TOKENS, H_PADDING_RATIO,
    H_COUNT
};

#define METRICS_MAX_DEVICES 16

/* Sets up the registry (histogram bounds, zero counters). Call once at start,
 * before any other thread runs. */
void metrics_init(void);

/* Publishes the model info labels and the device labels of the inference
 * histogram ("cpu", or CUDA ordinals) once the model is loaded; until then
 * those series are simply absent. Call once. */
void metrics_set_model(const char *model_name, const char *sha256, const char *dtype, const char *device_kind,
                       int n_devices, const char *const *device_labels);

const char *metrics_endpoint_name(int ep);

void metrics_request(int endpoint, int status, double seconds); /* requests_total + duration */
void metrics_reject(int reason);
void metrics_observe(int hist, double value);
void metrics_inference(int device, double seconds);
void metrics_queue_depth(long depth);
/* Graph cache lookups (absolute totals as reported by the backends). */
void metrics_graph_cache(long long hits, long long misses);

/* Renders the exposition text into a malloc'ed buffer (*len bytes, NUL-terminated);
 * NULL when out of memory. Appends the GPU snapshot families when available. */
char *metrics_render(size_t *len);

#endif
