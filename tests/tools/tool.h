/*
 * tool.h - the set-up and teardown every layad-dev tool shares.
 *
 * A tool fills a `tool` in three steps: tool_parse reads its options (the
 * common ones here, its own through a callback, in the order of its own
 * option table, so that abbreviations and messages stay what they were);
 * tool_open_model opens and verifies the checkpoint; the tool creates its
 * backends itself (the CUDA options are its business) and parks them in
 * t->gpu / t->cpu. Whatever was set up is released by tool_close, the one exit
 * path; tool_fail reports a failure as "<tool>: <message>" on the way there.
 *
 * Exit statuses, as before the tools shared this: 0 success (or SKIP
 * without a GPU), 1 a gate failed (parity-fast) or mkmodel failed, 2 usage or
 * runtime error.
 */
#ifndef LAYAD_TOOL_H
#define LAYAD_TOOL_H

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>

#include "model/backend/rows.h"
#include "model/base/error.h"
#include "model/checkpoint/checkpoint.h"

/* getopt_long codes of the common options (outside the range of short options). */
enum { TOOL_OPT_MODEL = 0x100, TOOL_OPT_DTYPE, TOOL_OPT_DEVICE, TOOL_OPT_THREADS, TOOL_OPT_OUT };

/* Entries for a tool's option table; 'h' is -h/--help. */
#define TOOL_MODEL {"model", required_argument, 0, TOOL_OPT_MODEL}
#define TOOL_DTYPE {"dtype", required_argument, 0, TOOL_OPT_DTYPE}
#define TOOL_DEVICE {"device", required_argument, 0, TOOL_OPT_DEVICE}
#define TOOL_THREADS {"threads", required_argument, 0, TOOL_OPT_THREADS}
#define TOOL_OUT {"out", required_argument, 0, TOOL_OPT_OUT}
#define TOOL_HELP {"help", no_argument, 0, 'h'}

typedef struct tool {
    const char *name;         /* message prefix: "bench", "check", "parity-fast", ... */
    void (*usage)(FILE *f);
    /* the common options (defaults from tool_init) */
    const char *model;        /* --model DIR, NULL if not given */
    const char *out;          /* --out FILE, NULL if not given */
    int dtype;                /* --dtype fp16|bf16 (CUDA_DT_*), default fp16 */
    int device;               /* --device N, default 0 */
    int threads;              /* --threads N, default 0 (all cores) */
    /* owned: released by tool_close */
    laya_checkpoint *ck;      /* open once tool_open_model succeeded */
    laya_backend *gpu, *cpu;
    json_t *rep;              /* the JSON report (an object), NULL until the tool makes it */
    layad_error err;          /* the failure tool_close reports */
    int ck_open;
} tool;

void tool_init(tool *t, const char *name, void (*usage)(FILE *f));

/* A tool's own option: 0, or an exit status to return at once. */
typedef int (*tool_opt_fn)(void *ctx, int code, const char *arg);

/* Parses argv with getopt_long (shortopts, opts): the common codes and 'h'
 * here, any other code through own(ctx, code, optarg). Returns -1 to go on, or
 * the exit status: 0 after --help, 2 for an unknown option or a bad dtype. */
int tool_parse(tool *t, int argc, char **argv, const char *shortopts, const struct option *opts,
               tool_opt_fn own, void *ctx);

/* Prints the usage on stderr and returns 2. */
int tool_usage_error(const tool *t);

/* 1 (after printing SKIP) when no CUDA device is visible: the GPU tools then exit 0. */
int tool_skip_without_gpu(void);

/* Opens and verifies t->model into t->ck. 0, or -1 with t->err set. */
int tool_open_model(tool *t);

/* Writes t->rep to path (indented, sorted keys). 0, or -1 after printing
 * "<tool>: cannot write <path>". */
int tool_write_report(const tool *t, const char *path);

/* The command line as a JSON array of strings. */
json_t *tool_argv_json(int argc, char **argv);

/* Prints "<tool>: <t->err's message>" on stderr and returns 2. */
int tool_fail(const tool *t);

/* Releases everything t owns (backends, checkpoint, report); returns status. */
int tool_close(tool *t, int status);

/* The NVML snapshot (server/telemetry/gpu_snapshot) as JSON, or null when NVML
 * is unavailable or has no valid refresh yet. Starts the snapshot thread on
 * first use. */
json_t *gpu_snapshot_json(void);

#endif
