/* cli.h: what the subcommands share in reading their options. */
#ifndef TP_UTIL_CLI_H
#define TP_UTIL_CLI_H

/* Prints the one-line error for an option getopt_long refused and returns 2
 * (the exit status for bad arguments). c is getopt_long's return: ':' when
 * the option's value is missing, '?' when the option is unknown; so that the
 * two differ, every optstring begins with ':' (after a '+', where there is
 * one). who names the subcommand: "merge: -o needs a value (see trainprof
 * merge --help)". */
int tp_cli_option_error(const char *who, char **argv, int c);

#endif
