/* options.c: parsing a command's options from its table. */
#include "util/options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define OPTIONS_MAX 32
#define HELP_ID     0x1000 /* getopt_long's value for --help */
#define LONG_ID     0x2000 /* + index: an option with no short name */

/* The one line for an option getopt_long refused (c: ':' for a missing
 * value, '?' for an unknown option); returns 2. */
static int refused_option(const char *who, char **argv, int c)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    char name[64];
    if (arg && strncmp(arg, "--", 2) == 0) /* a long option, maybe with =VALUE */
        snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
    else
        snprintf(name, sizeof name, "-%c", optopt ? optopt : '?');
    if (c == ':')
        tp_error("%s: %s needs a value (see trainprof %s --help)", who, name, who);
    else
        tp_error("%s: unknown option %s (see trainprof %s --help)", who, name, who);
    return TP_OPTIONS_REFUSED;
}

static const tp_option *find(const tp_command *cmd, int c)
{
    for (size_t i = 0; i < cmd->noptions; i++)
        if (cmd->options[i].short_name ? c == cmd->options[i].short_name : c == LONG_ID + (int)i)
            return &cmd->options[i];
    return NULL;
}

/* "--name" or "-n", as the user may have typed it. */
static void option_name(const tp_option *o, char *out, size_t cap)
{
    if (o->long_name)
        snprintf(out, cap, "--%s", o->long_name);
    else
        snprintf(out, cap, "-%c", o->short_name);
}

static bool choice(const tp_option *o, const char *value, char *err, size_t cap)
{
    for (int i = 0; o->choices[i]; i++)
        if (strcmp(value, o->choices[i]) == 0) {
            *(int *)o->target = i;
            return true;
        }
    size_t n = (size_t)snprintf(err, cap, "must be ");
    for (int i = 0; o->choices[i] && n < cap; i++)
        n += (size_t)snprintf(err + n, cap - n, "%s%s", o->choices[i],
                              !o->choices[i + 1]   ? ""
                              : !o->choices[i + 2] ? " or "
                                                   : ", ");
    return false;
}

static bool number(const tp_option *o, const char *value, char *err, size_t cap)
{
    char *end;
    errno = 0;
    bool whole = o->kind == TP_OPT_INTEGER;
    double v = whole ? (double)strtol(value, &end, 10) : strtod(value, &end);
    if (errno || end == value || *end != '\0' || !isfinite(v) || v < o->min || v > o->max) {
        snprintf(err, cap, "must be a %s%s%s from %.15g to %.15g",
                 whole ? "whole number" : "number", o->unit ? " of " : "", o->unit ? o->unit : "",
                 o->min, o->max);
        return false;
    }
    if (whole)
        *(long *)o->target = (long)v;
    else
        *(double *)o->target = v;
    return true;
}

/* Takes option o with its value (NULL for a flag); false after the error. */
static bool take(const tp_command *cmd, const tp_option *o, const char *value)
{
    char err[256] = "";
    bool ok = true;
    switch (o->kind) {
    case TP_OPT_FLAG: *(bool *)o->target = true; break;
    case TP_OPT_STRING: *(const char **)o->target = value; break;
    case TP_OPT_CHOICE: ok = choice(o, value, err, sizeof err); break;
    case TP_OPT_NUMBER:
    case TP_OPT_INTEGER: ok = number(o, value, err, sizeof err); break;
    case TP_OPT_CUSTOM: ok = o->parse(value, o->target, err, sizeof err); break;
    }
    if (!ok) {
        char name[64];
        option_name(o, name, sizeof name);
        tp_error("%s: %s %s (got '%s')", cmd->name, name, err, value);
    }
    return ok;
}

int tp_options_parse(const tp_command *cmd, int argc, char **argv, int *first)
{
    struct option longopts[OPTIONS_MAX + 2];
    char shortopts[3 + 3 * OPTIONS_MAX + 2];
    size_t nl = 0, ns = 0;
    if (cmd->stop_at_operand)
        shortopts[ns++] = '+';
    shortopts[ns++] = ':'; /* a missing value and an unknown option differ */
    for (size_t i = 0; i < cmd->noptions && i < OPTIONS_MAX; i++) {
        const tp_option *o = &cmd->options[i];
        bool has_value = o->kind != TP_OPT_FLAG;
        int id = o->short_name ? o->short_name : LONG_ID + (int)i;
        if (o->long_name)
            longopts[nl++] = (struct option){o->long_name, has_value, NULL, id};
        if (o->short_name) {
            shortopts[ns++] = o->short_name;
            if (has_value)
                shortopts[ns++] = ':';
        }
    }
    longopts[nl++] = (struct option){"help", no_argument, NULL, HELP_ID};
    longopts[nl] = (struct option){NULL, 0, NULL, 0};
    shortopts[ns++] = 'h';
    shortopts[ns] = '\0';
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        if (c == 'h' || c == HELP_ID) {
            tp_options_help(stdout, cmd);
            return TP_OPTIONS_HELP;
        }
        const tp_option *o = find(cmd, c);
        if (!o)
            return refused_option(cmd->name, argv, c);
        if (!take(cmd, o, optarg))
            return TP_OPTIONS_REFUSED;
    }
    size_t n = (size_t)(argc - optind);
    if (n < cmd->min_operands) {
        tp_error("%s: expected %s (see trainprof %s --help)", cmd->name, cmd->operands, cmd->name);
        return TP_OPTIONS_REFUSED;
    }
    if (cmd->max_operands >= 0 && n > (size_t)cmd->max_operands) {
        if (cmd->max_operands == 0)
            tp_error("%s: takes no arguments (got '%s'; see trainprof %s --help)", cmd->name,
                     argv[optind], cmd->name);
        else
            tp_error("%s: takes at most %ld %s (got '%s' too; see trainprof %s --help)", cmd->name,
                     cmd->max_operands, cmd->max_operands == 1 ? "argument" : "arguments",
                     argv[optind + cmd->max_operands], cmd->name);
        return TP_OPTIONS_REFUSED;
    }
    *first = optind;
    return TP_OPTIONS_OK;
}

/* "  -o, --output FILE" or "      --force", as --help lists the option. */
static void left_column(const tp_option *o, char *out, size_t cap)
{
    char shortname[8] = "    ";
    if (o->short_name)
        snprintf(shortname, sizeof shortname, "-%c%s", o->short_name, o->long_name ? ", " : "");
    snprintf(out, cap, "  %s%s%s%s%s", shortname, o->long_name ? "--" : "",
             o->long_name ? o->long_name : "", o->value_name ? " " : "",
             o->value_name ? o->value_name : "");
}

void tp_options_help(FILE *out, const tp_command *cmd)
{
    static const tp_option help = TP_FLAG('h', "help", "show this help", NULL);
    fputs(cmd->usage, out);
    fputs("\noptions:\n", out);
    size_t width = 0;
    char left[128];
    for (size_t i = 0; i <= cmd->noptions; i++) {
        left_column(i < cmd->noptions ? &cmd->options[i] : &help, left, sizeof left);
        width = strlen(left) > width ? strlen(left) : width;
    }
    for (size_t i = 0; i <= cmd->noptions; i++) {
        const tp_option *o = i < cmd->noptions ? &cmd->options[i] : &help;
        left_column(o, left, sizeof left);
        fprintf(out, "%-*s  ", (int)width, left);
        for (const char *h = o->help; *h; h++) { /* a help of several lines, aligned */
            fputc(*h, out);
            if (*h == '\n')
                fprintf(out, "%*s", (int)width + 2, "");
        }
        fputc('\n', out);
    }
    if (cmd->epilogue) {
        fputc('\n', out);
        fputs(cmd->epilogue, out);
    }
}
