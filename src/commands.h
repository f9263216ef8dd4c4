/* commands.h: the subcommands of the trainprof program (one file each). */
#ifndef TP_COMMANDS_H
#define TP_COMMANDS_H

/* Each returns the process exit status. Usage errors return 2. */
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_html(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_summarize(int argc, char **argv);
int cmd_iobench(int argc, char **argv);
int cmd_bottleneck(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_capture(int argc, char **argv);
int cmd_mcp(int argc, char **argv);

#endif
