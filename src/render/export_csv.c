/* export_csv.c: every sample as one CSV row. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "render/export.h"
#include "store/reader_stream.h"
#include "util/labels.h"
#include "util/utf8.h"

/* Writes a CSV field (RFC 4180): quoted when it holds a comma, quote or line
 * break, its quotes doubled; valid UTF-8 whatever the run file holds. */
static void csv_field(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    bool quote = strpbrk((const char *)p, ",\"\n\r") != NULL;
    if (quote)
        fputc('"', out);
    while (*p) {
        uint32_t cp;
        p += tp_utf8_decode(p, &cp);
        char buf[4];
        if (cp == '"')
            fputc('"', out);
        fwrite(buf, 1, tp_utf8_encode(cp, buf), out);
    }
    if (quote)
        fputc('"', out);
}

typedef struct csv_ctx {
    FILE *out;
    const tp_run *run;
    tp_export_budget *budget;
} csv_ctx;

static void csv_row(void *ctx, const tp_run_series *s, int64_t t_ns, double value)
{
    csv_ctx *c = ctx;
    if (!tp_export_room(c->budget))
        return;
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
    fputc(',', c->out);
    csv_field(c->out, s->metric);
    fputc(',', c->out);
    csv_field(c->out, labels);
    fprintf(c->out, ",%.10g\n", value);
}

bool tp_export_csv(FILE *out, tp_run *run, tp_export_budget *b, char *err, size_t cap)
{
    csv_ctx c = {out, run, b};
    fputs("t_s,agent,metric,labels,value\n", out);
    return tp_run_each_sample(run, csv_row, &c, err, cap);
}
