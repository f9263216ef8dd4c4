/* export_csv.c: every sample as one CSV row. */
#include <string.h>

#include "render/export.h"
#include "store/reader_stream.h"
#include "util/labels.h"

/* Writes a CSV field, quoted when it holds a comma, quote or line break. */
static void csv_field(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

typedef struct csv_ctx {
    FILE *out;
    const tp_run *run;
} csv_ctx;

static void csv_row(void *ctx, const tp_run_series *s, int64_t t_ns, double value)
{
    csv_ctx *c = ctx;
    const char *agent = "";
    for (size_t a = 0; a < c->run->nagents; a++)
        if (c->run->agents[a].id == s->agent_id)
            agent = c->run->agents[a].name;
    char labels[TP_LABELS_MAX];
    tp_labels_display(s->labels, labels, sizeof labels);
    for (char *p = labels; *p; p++)
        if (*p == ',')
            *p = ';';
    fprintf(c->out, "%.9f,", (double)t_ns / 1e9);
    csv_field(c->out, agent);
    fprintf(c->out, ",%s,", s->metric);
    csv_field(c->out, labels);
    fprintf(c->out, ",%.10g\n", value);
}

bool tp_export_csv(FILE *out, tp_run *run, char *err, size_t cap)
{
    csv_ctx c = {out, run};
    fputs("t_s,agent,metric,labels,value\n", out);
    return tp_run_each_sample(run, csv_row, &c, err, cap);
}
