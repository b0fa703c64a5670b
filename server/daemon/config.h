/*
 * config.h - `layad serve` configuration: one table, four sources.
 *
 * Every option is one row of a table (name, type, default, help). The same
 * row is read from the config file (libinih, `name = value`), from the
 * environment (`LAYAD_` + upper-case name), and from the command line
 * (`--name value`, `--name=value`, dashes or underscores), and printed by
 * `layad serve --help`. `model` and `model_aliases` repeat: each line or
 * flag adds an entry (in the environment, entries are separated by spaces). Precedence: flags > env > file > defaults. The file
 * is the one named by --config / LAYAD_CONFIG (none by default).
 *
 * Keeping all four sources on one table is what guarantees that --help,
 * config/layad.conf and the env file never drift apart from the code.
 */
#ifndef LAYAD_SERVER_CONFIG_H
#define LAYAD_SERVER_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "model/base/error.h"

#define SERVE_STR_MAX 512
#define SERVE_LIST_MAX 8   /* entries of a repeatable option (model, model_aliases) */

/* A repeatable option: every line or flag adds an entry; a source of higher
 * precedence (file < env < flags) replaces the entries of a lower one. */
typedef struct serve_list {
    char item[SERVE_LIST_MAX][SERVE_STR_MAX];
    int n;
    char source[80]; /* the source of the entries ("" = defaults) */
} serve_list;
#define SERVE_KEY_MAX 4096 /* bearer key bytes; a longer key (flag, env or file) is refused at start */

typedef struct serve_config {
    /* model and backend */
    serve_list model;                /* [name=]checkpoint dir or org/name[/sub][@rev]; first = default */
    char device[16];                 /* cpu | cuda | auto */
    char devices[SERVE_STR_MAX];     /* CUDA ordinals "0,1"; "" = every visible device */
    char dtype[8];                   /* fp16 | bf16 (GPU) */
    int cpu_threads;                 /* CPU backend threads, all workers; 0 = all cores */
    int cpu_workers;                 /* CPU backend workers (each its own backend) */
    char warm[SERVE_STR_MAX];        /* "all", or shapes "rows x tokens" whose buckets are warmed */
    char state_dir[SERVE_STR_MAX];   /* GEMM tuning cache directory ("": none) */
    int gemm_tune;                   /* time cuBLASLt candidates per GEMM shape (bool) */
    int path_tune_tokens;            /* buckets up to this many tokens time their kernel paths */
    int att_pack_tokens;             /* buckets up to this many tokens: a two-group attention graph */
    int att_wo_tokens;               /* buckets up to this many tokens: attention + out-projection fused */
    /* model naming */
    char model_name[128];            /* served name of an unnamed first model; "" = laya-rl-agent */
    serve_list model_aliases;        /* [name=]alias,alias: extra names of a model (the first without name=) */
    /* HTTP */
    char bind[64];                   /* listen address (IPv4 or IPv6 literal) */
    int port;
    int http_threads;                /* MHD worker threads (parse, tokenize, format) */
    int max_connections;
    int connection_timeout_s;        /* idle / slow-client timeout */
    double header_timeout_s;         /* whole request head, from open or the last response */
    double body_timeout_s;           /* whole body, from the end of the head */
    int max_connections_per_ip;      /* 0 = no cap */
    int reuse_port;                  /* SO_REUSEPORT: share the port with other processes (bool) */
    long max_body_bytes;             /* request body cap, enforced while streaming */
    char api_key[SERVE_KEY_MAX + 1]; /* bearer key; "" = none */
    char api_key_file[SERVE_STR_MAX];/* file holding the bearer key (first line) */
    int allow_unauthenticated_remote; /* serve a non-loopback bind without a key (bool) */
    char docs[8];                    /* GET /docs: auto (on unless a key is set) | true | false */
    /* request limits */
    int max_questions, max_options, max_levels, max_states;
    long max_state_bytes;            /* 0 = unlimited */
    int max_len;                     /* per-request max_len cap; 0 = checkpoint */
    int head_max_len;                /* per-request head_max_len cap; 0 = checkpoint */
    int return_logits;               /* allow "return_logits" in requests */
    int jev_strict;                  /* strict Jev answers on every request */
    int systemone_busy_status;       /* 503 or 529: /v1/systemone's answer when busy */
    /* scheduler */
    int max_queue;                   /* requests waiting; full -> 503 (systemone: its busy status) */
    int batch_window_us;             /* how long to gather rows before a batch */
    int worker_spin_us;              /* poll after a batch before sleeping (-1: auto) */
    int http_spin_us;                /* an HTTP thread polls for a lone decision's answer (-1: auto) */
    int max_batch_rows;
    int max_batch_tokens;            /* real tokens per batch */
    double request_timeout_s;        /* deadline from arrival -> 504 */
    long max_request_tokens;         /* tokens of one request; beyond -> 413 (0 = no limit) */
    double max_queue_wait_s;         /* estimated wait at admission; beyond -> 503/529 (0 = off) */
    /* lifecycle and logs */
    double shutdown_grace_s;
    char log_file[SERVE_STR_MAX];    /* "" = stderr */
    char log_format[8];              /* text | json */
    int log_requests;                /* one line per request */
    int gpu_metrics;                 /* export the NVML snapshot when available */
    char config_path[SERVE_STR_MAX]; /* the file that was read ("" = none) */
} serve_config;

/* Fills defaults, then reads file, env and flags (argv[0] is the subcommand).
 * Returns 0; 1 when --help was printed (caller exits 0); -1 on a bad value,
 * unknown flag or unreadable file (err set, message names the source). */
int serve_config_load(serve_config *c, int argc, char **argv, layad_error *err);

/* Sets the defaults only (tests). */
void serve_config_defaults(serve_config *c);

/* Applies one `name = value` (source names where it came from, for errors). */
int serve_config_set(serve_config *c, const char *name, const char *value,
                     const char *source, layad_error *err);

/* Prints every option with its env name, default and help. */
void serve_config_help(FILE *f);

#endif
