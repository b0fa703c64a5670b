/*
 * metrics.h - the Prometheus registry of the daemon (server/api/README.md, "Metrics").
 *
 * One process-wide registry, the explicitly shared object every thread writes
 * to: counters and histogram buckets are relaxed atomics (no lock on the
 * request path), label sets are fixed at start-up (endpoints, status codes,
 * rejection reasons, devices), so recording never allocates. metrics_render
 * writes the text exposition format (version 0.0.4) that `promtool check
 * metrics` accepts: the laya_* families, laya_build_info (build_info.h), the
 * process_* families (process.h), and the laya_gpu_* families of gpu_snapshot
 * when NVML delivered a snapshot. deploy/grafana and deploy/prometheus query
 * these names; tests/test_ops_monitoring.c keeps them in step.
 */
#ifndef LAYAD_SERVER_METRICS_H
#define LAYAD_SERVER_METRICS_H

#include <stddef.h>

enum metrics_endpoint {
    EP_DECIDE, EP_SYSTEMONE, EP_MODELS, EP_HEALTHZ, EP_READYZ, EP_HEALTH, EP_DRAIN, EP_METRICS,
    EP_SYSTEMONE_BATCH, EP_OPENAPI, EP_DOCS, EP_OTHER, EP_COUNT
};

enum metrics_reject {
    REJ_QUEUE_FULL, REJ_DRAINING, REJ_DEADLINE, REJ_BODY_TOO_LARGE, REJ_UNAUTHORIZED, REJ_COUNT
};

/* The unlabelled histograms. laya_request_duration_seconds is labelled by
 * endpoint and code and fed by metrics_request alone. */
enum metrics_hist {
    H_QUEUE_WAIT, H_TOKENIZE, H_BATCH_ROWS, H_BATCH_TOKENS,
    H_PADDING_RATIO,    /* deprecated laya_batch_padding_ratio (padded/real, >= 1); metrics_batch feeds it */
    H_PADDING_FRACTION, /* laya_batch_padding_fraction, (padded - real) / padded; only via metrics_batch */
    H_COUNT
};

/* Stages of the serving path of one answered decision, from the end of its
 * body to its last byte (laya_serving_stage_seconds{stage}): parse (validate,
 * tokenize, build rows, submit), wake (batch handed to the worker -> its
 * thread runs it), stage (inputs laid out in the pinned buffer), run (launch ->
 * synchronized; holds launch, the host's launch call, and gpu, the device's
 * span from the input copy to the output copy as it timed it, which holds h2d
 * and d2h, the copies), unpack (results out of the staging buffer), back
 * (forward end -> the loop thread finished the job), resume (-> an HTTP thread
 * took it up), format (the response body), send (queued -> the last byte
 * handed to the kernel). The queue wait has its own histogram,
 * laya_queue_wait_seconds. */
enum metrics_stage {
    ST_PARSE, ST_WAKE, ST_STAGE, ST_RUN, ST_LAUNCH, ST_GPU, ST_H2D, ST_D2H, ST_UNPACK, ST_BACK, ST_RESUME,
    ST_FORMAT, ST_SEND, ST_COUNT
};

#define METRICS_MAX_DEVICES 16

/* Sets up the registry (histogram bounds, zero counters). Call once at start,
 * before any other thread runs. */
void metrics_init(void);

#define METRICS_MAX_MODELS 8

/* Publishes the served models (laya_model_info{model,...}, one per model, and
 * the per-model counters) and the device labels of the inference histogram
 * ("cpu", or CUDA ordinals) once the models are loaded; until then those
 * series are simply absent. Call once. */
void metrics_set_models(int n_models, const char *const *model_names, const char *const *sha256,
                        const char *dtype, const char *device_kind, int n_devices, const char *const *device_labels);

/* A decision of model `model` (its index in the table) answered 200 with `tokens` input tokens. */
void metrics_model_answer(int model, long tokens);

const char *metrics_endpoint_name(int ep);

/* One answered request: laya_requests_total{endpoint,code} and the
 * laya_request_duration_seconds{endpoint,code} histogram (every endpoint:
 * a fast 401 or 422 no longer lands among the decisions). */
void metrics_request(int endpoint, int status, double seconds);
void metrics_reject(int reason);
/* How an HTTP thread took up a decision's answer (laya_http_answers_total{how}):
 * it was there when the handler looked (after polling while the decision was
 * the only one in flight), or the connection was suspended and resumed. */
enum metrics_taken { TAKEN_POLLED, TAKEN_RESUMED, TAKEN_COUNT };
void metrics_answer_taken(int how);
void metrics_observe(int hist, double value);
void metrics_stage(int stage, double seconds);
const char *metrics_stage_name(int stage);
/* One batch handed to a worker: rows, real tokens and the tokens of its padded
 * buckets. Feeds laya_batch_rows, laya_batch_tokens, the padding fraction
 * (padded - real) / padded in [0, 1) (0 when padded is 0) and the deprecated
 * padded/real ratio. */
void metrics_batch(int rows, long real_tokens, long padded_tokens);
/* laya_ready reads *state at each render: 1 while it equals ready_value, else
 * 0 (loading, draining). *state must stay valid until the last render. Until
 * this is called laya_ready is absent. */
void metrics_watch_ready(const _Atomic int *state, int ready_value);
void metrics_inference(int device, double seconds);
void metrics_queue_depth(long depth);
/* Graph cache lookups (absolute totals as reported by the backends). */
void metrics_graph_cache(long long hits, long long misses);

/* Renders the exposition text into a malloc'ed buffer (*len bytes, NUL-terminated);
 * NULL when out of memory. Appends the process and GPU snapshot families. */
char *metrics_render(size_t *len);

#endif
