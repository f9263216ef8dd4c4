/* options.h: a command's options as a table, from which its parsing, its
 * refusals and its --help all come (in the spirit of git's parse-options).
 *
 * A command declares a tp_command: its synopsis and description (the help's
 * text before the options), its options (each a tp_option: names, kind,
 * where the value goes, the line --help shows) and how many operands it
 * takes. tp_options_parse reads argv against it: -h and --help print the
 * help to stdout; an unknown option, a missing value, a value out of range
 * or a wrong number of operands is one line on stderr naming what and where,
 * and the command returns 2. */
#ifndef TP_UTIL_OPTIONS_H
#define TP_UTIL_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum {
    TP_OPT_FLAG,    /* bool *target = true */
    TP_OPT_STRING,  /* const char **target = the value */
    TP_OPT_CHOICE,  /* int *target = the value's index in choices */
    TP_OPT_NUMBER,  /* double *target = the value, a finite number in [min, max] */
    TP_OPT_INTEGER, /* long *target = the value, a whole number in [min, max] */
    TP_OPT_CUSTOM,  /* parse(value, target, err, cap) says whether it takes it */
} tp_opt_kind;

typedef struct tp_option {
    char short_name;       /* 0 for none */
    const char *long_name; /* without the dashes */
    tp_opt_kind kind;
    const char *value_name; /* FILE, SECONDS ... (NULL for a flag) */
    const char *help;       /* its line in --help */
    void *target;
    const char *const *choices; /* TP_OPT_CHOICE: NULL-terminated */
    double min, max;            /* TP_OPT_NUMBER, TP_OPT_INTEGER */
    const char *unit;           /* "seconds": "a number of seconds from 0.01 to 3600" */
    /* TP_OPT_CUSTOM: false, with what is wrong in err ("must be ..."), to refuse */
    bool (*parse)(const char *value, void *target, char *err, size_t cap);
} tp_option;

/* The table's rows, one macro per kind: short name (0 for none), long name,
 * the value's name in --help, the help line, where the value goes, and
 * what the kind needs besides. */
#define TP_FLAG(s, l, h, t)                                                          \
    {                                                                                \
        .short_name = s, .long_name = l, .kind = TP_OPT_FLAG, .help = h, .target = t \
    }
#define TP_STRING(s, l, v, h, t)                                                            \
    {                                                                                       \
        .short_name = s, .long_name = l, .kind = TP_OPT_STRING, .value_name = v, .help = h, \
        .target = t                                                                         \
    }
#define TP_CHOICE(s, l, v, h, t, c)                                                         \
    {                                                                                       \
        .short_name = s, .long_name = l, .kind = TP_OPT_CHOICE, .value_name = v, .help = h, \
        .target = t, .choices = c                                                           \
    }
#define TP_NUMBER(s, l, v, h, t, lo, hi, u)                                                 \
    {                                                                                       \
        .short_name = s, .long_name = l, .kind = TP_OPT_NUMBER, .value_name = v, .help = h, \
        .target = t, .min = lo, .max = hi, .unit = u                                        \
    }
#define TP_INTEGER(s, l, v, h, t, lo, hi, u)                                                 \
    {                                                                                        \
        .short_name = s, .long_name = l, .kind = TP_OPT_INTEGER, .value_name = v, .help = h, \
        .target = t, .min = lo, .max = hi, .unit = u                                         \
    }
#define TP_CUSTOM(s, l, v, h, t, fn)                                                        \
    {                                                                                       \
        .short_name = s, .long_name = l, .kind = TP_OPT_CUSTOM, .value_name = v, .help = h, \
        .target = t, .parse = fn                                                            \
    }

/* A command's table of options, in a tp_command initializer:
 * {.name = "export", TP_OPTION_TABLE(options), ...}. */
#define TP_OPTION_TABLE(table) .options = (table), .noptions = sizeof(table) / sizeof *(table)

typedef struct tp_command {
    const char *name;     /* "export" */
    const char *usage;    /* the help's text before "options:", from "usage: ..." */
    const char *epilogue; /* the help's text after the options (exit statuses), or NULL */
    const tp_option *options;
    size_t noptions;
    size_t min_operands;
    long max_operands;    /* -1: any number */
    const char *operands; /* what they are, for errors: "a run file" */
    bool stop_at_operand; /* options end at the first operand (record's command) */
} tp_command;

enum { TP_OPTIONS_OK = -1, TP_OPTIONS_HELP = 0, TP_OPTIONS_REFUSED = 2 };

/* Parses argv against cmd. TP_OPTIONS_OK with *first the index of the first
 * operand; TP_OPTIONS_HELP (0, the exit status) after printing the help;
 * TP_OPTIONS_REFUSED (2, the exit status) after one line on stderr. */
int tp_options_parse(const tp_command *cmd, int argc, char **argv, int *first);

/* Writes cmd's help: its usage text, then "options:" and a line per option
 * (and -h, --help), aligned. */
void tp_options_help(FILE *out, const tp_command *cmd);

#endif
