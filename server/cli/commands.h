/*
 * commands.h - the layad subcommands. Each lives in its own file and takes the
 * arguments after the subcommand name (argv[0] is the subcommand). Returns the
 * process exit status. The development tools are a separate binary
 * (tests/tools/tools.h, layad-dev).
 */
#ifndef LAYAD_COMMANDS_H
#define LAYAD_COMMANDS_H

int cmd_serve(int argc, char **argv);  /* server/daemon/cmd_serve.c */
int cmd_info(int argc, char **argv);   /* server/cli/cmd_info.c */
int cmd_decide(int argc, char **argv); /* server/cli/cmd_decide.c */
int cmd_prompt(int argc, char **argv); /* server/cli/cmd_decide.c */

#endif
