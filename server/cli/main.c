/*
 * main.c - layad entry point: dispatches to a subcommand (serve by default).
 * The development tools are in layad-dev (tests/tools/main.c).
 */
#include <stdio.h>
#include <string.h>

#include "server/cli/commands.h"
#include "server/telemetry/build_info.h"

/* `layad --version`: what laya_build_info exports, one "key: value" per line
 * after the first. */
static int cmd_version(int argc, char **argv)
{
    (void)argc, (void)argv;
    build_info b;
    build_info_get(&b);
    printf("layad %s\ncommit: %s\ncuda: %s\ncublas: %s\n", b.version, b.commit, b.cuda, b.cublas);
    return 0;
}

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
} command;

static const command commands[] = {
    {"serve", cmd_serve, "serve a checkpoint over HTTP (the daemon; see layad serve --help)"},
    {"info", cmd_info, "print a checkpoint's geometry, budgets, temperatures and sha256"},
    {"decide", cmd_decide, "answer one request body (JSON) as the daemon would, on the CPU"},
    {"prompt", cmd_prompt, "print the question rows (token ids, markers) a request builds"},
    {"version", cmd_version, "print the version, git commit, CUDA runtime and cuBLAS versions (also --version)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: layad [COMMAND] [OPTIONS]   (default command: serve)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n'layad COMMAND --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
    const char *name = "serve";
    int first = 1;
    if (argc > 1 && argv[1][0] != '-') {
        name = argv[1];
        first = 1;
    } else {
        first = 0; /* options go to the default command; argv[0] stands for it */
    }
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))) {
        usage(stdout);
        return 0;
    }
    if (argc > 1 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")))
        return cmd_version(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(commands[i].name, name))
            return commands[i].fn(argc - first, argv + first);
    fprintf(stderr, "layad: unknown command '%s'\n", name);
    usage(stderr);
    return 2;
}
