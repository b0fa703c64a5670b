/*
 * main.c - layad-dev, the development tools: dispatches to a tool by name.
 */
#include <stdio.h>
#include <string.h>

#include "tests/tools/tools.h"

typedef struct tool {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
} tool;

static const tool tools[] = {
    {"mkmodel", cmd_mkmodel, "write a deterministic random checkpoint in the real layout"},
    {"bench-cpu", cmd_bench_cpu, "time the CPU fp32 forward on rows (JSON) and print logits"},
    {"parity-fast", cmd_parity_fast, "GPU forward (fp16/bf16, eager and graphs) vs the CPU fp32 one"},
    {"check", cmd_check, "GPU load/capture times, latencies, deltas, NVML (SKIP without a GPU)"},
    {"bench", cmd_bench, "GPU forward time per shape against the physical floor"},
    {"bench-request", cmd_bench_request, "host time of request_parse and request_format on one body (no forward)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: layad-dev TOOL [OPTIONS]\n\ntools:\n");
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        fprintf(f, "  %-12s %s\n", tools[i].name, tools[i].help);
    fprintf(f, "\n'layad-dev TOOL --help' describes a tool's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        if (!strcmp(tools[i].name, argv[1]))
            return tools[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "layad-dev: unknown tool '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
