/*
 * tools.h - the development tools of layad-dev: checkpoint generation, the GPU
 * check, parity sweep and forward benchmarks. Not part of the daemon; each
 * takes the arguments after its name (argv[0] is the tool) and returns the
 * process exit status.
 */
#ifndef LAYAD_TOOLS_H
#define LAYAD_TOOLS_H

int cmd_mkmodel(int argc, char **argv);     /* cmd_mkmodel.c */
int cmd_bench_cpu(int argc, char **argv);   /* cmd_bench_cpu.c */
int cmd_parity_fast(int argc, char **argv); /* cmd_parity.c */
int cmd_check(int argc, char **argv);       /* cmd_check.c */
int cmd_bench(int argc, char **argv);       /* cmd_bench.c */
int cmd_bench_request(int argc, char **argv); /* cmd_bench_request.c */

#endif
