/*
 * commands.h - the layad subcommands. Each lives in its own file and takes the
 * arguments after the subcommand name (argv[0] is the subcommand). Returns the
 * process exit status.
 */
#ifndef LAYAD_COMMANDS_H
#define LAYAD_COMMANDS_H

int cmd_serve(int argc, char **argv);   /* server/cmd_serve.c  */
int cmd_info(int argc, char **argv);    /* model/cmd_info.c    */
int cmd_mkmodel(int argc, char **argv); /* model/cmd_mkmodel.c */
int cmd_bench_cpu(int argc, char **argv); /* model/cmd_bench_cpu.c */
int cmd_parity_fast(int argc, char **argv); /* model/cmd_parity.c */
int cmd_check(int argc, char **argv);       /* model/cmd_check.c  */
int cmd_bench(int argc, char **argv);       /* model/cmd_bench.c  */

int cmd_decide(int argc, char **argv);      /* model/cmd_decide.c */
int cmd_prompt(int argc, char **argv);      /* model/cmd_decide.c */

#endif
