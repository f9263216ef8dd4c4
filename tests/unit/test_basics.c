/* test_basics.c: parsing, counters, labels, statistics, units, JSON, model
 * facts, envelopes, the Prometheus format (the sampled stacks: test_stacks.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/downsample.h"
#include "render/remedy_words.h"
#include "render/verdict_words.h"
#include "store/model_facts_file.h"
#include "core/stats.h"
#include "collect/counter.h"
#include "harness.h"
#include "render/units.h"
#include "serve/prom_format.h"
#include "util/json_read.h"
#include "util/json_writer.h"
#include "util/labels.h"
#include "util/options.h"
#include "util/text_parse.h"
#include "util/utf8.h"

static void test_parse_numbers(void **state)
{
    (void)state;
    const char text[] = "  42 -7 18446744073709551615 18446744073709551616 x";
    const char *p = text, *end = text + strlen(text);
    uint64_t u;
    int64_t i;
    assert_true(tp_parse_u64(&p, end, &u));
    assert_int_equal(u, 42);
    assert_false(tp_parse_u64(&p, end, &u)); /* '-' is not unsigned */
    assert_true(tp_parse_i64(&p, end, &i));
    assert_int_equal(i, -7);
    assert_true(tp_parse_u64(&p, end, &u));
    assert_true(u == UINT64_MAX);
    assert_false(tp_parse_u64(&p, end, &u)); /* overflow */
    /* never reads past end: a number cut by the buffer's end */
    const char cut[] = "123456";
    p = cut;
    assert_true(tp_parse_u64(&p, cut + 3, &u));
    assert_int_equal(u, 123);
}

static void test_counter_delta(void **state)
{
    (void)state;
    uint64_t d;
    assert_true(tp_counter_delta(10, 15, &d));
    assert_int_equal(d, 5);
    assert_true(tp_counter_delta(4294967290ULL, 4, &d)); /* 32-bit wrap */
    assert_int_equal(d, 10);
    assert_false(tp_counter_delta(1000, 3, &d));           /* reset of a small counter */
    assert_false(tp_counter_delta(1ULL << 40, 3, &d));     /* reset of a 64-bit counter */
    assert_true(tp_counter_delta_range(990, 5, 1000, &d)); /* RAPL-style wrap */
    assert_int_equal(d, 16);
    assert_false(tp_counter_delta_range(990, 5, 0, &d));
    assert_true(fabs(tp_rate_per_s(500, 500000000ULL) - 1000.0) < 1e-9);
    assert_true(tp_rate_per_s(5, 0) == 0.0);
}

static void test_labels(void **state)
{
    (void)state;
    char buf[TP_LABELS_MAX], shown[TP_LABELS_MAX];
    tp_labels1(buf, sizeof buf, "device", "nvme0n1");
    assert_string_equal(buf, "{\"device\":\"nvme0n1\"}");
    tp_labels2(buf, sizeof buf, "gpu", "0", "kind", "a\"b\\c\n");
    assert_string_equal(buf, "{\"gpu\":\"0\",\"kind\":\"a\\\"b\\\\c\\u000a\"}");
    tp_labels1(buf, sizeof buf, NULL, NULL);
    assert_string_equal(buf, "{}");
    tp_labels_display("{\"gpu\":\"0\",\"ib_port\":\"mlx5_0/1\"}", shown, sizeof shown);
    assert_string_equal(shown, "gpu=0,ib_port=mlx5_0/1");
    char tiny[8];
    tp_labels1(tiny, sizeof tiny, "interface", "eth0");
    assert_true(strlen(tiny) < sizeof tiny); /* truncated, terminated */
}

static void test_stats(void **state)
{
    (void)state;
    double v[101];
    for (int i = 0; i <= 100; i++)
        v[i] = 100 - i; /* unsorted on purpose */
    tp_stats s;
    tp_stats_compute(v, 101, &s);
    assert_int_equal(s.count, 101);
    assert_true(fabs(s.mean - 50) < 1e-9);
    assert_true(fabs(s.p5 - 5) < 1e-9);
    assert_true(fabs(s.p50 - 50) < 1e-9);
    assert_true(fabs(s.p95 - 95) < 1e-9);
    assert_true(s.max == 100 && s.min == 0);
    double two[] = {10, 20};
    tp_stats_compute(two, 2, &s);
    assert_true(fabs(s.p95 - 19.5) < 1e-9); /* linear interpolation */
    tp_stats_compute(NULL, 0, &s);
    assert_true(isnan(s.mean));
}

/* The Wilson interval against figures worked by hand (k 8, n 625: 0.65 to
 * 2.50 %), at the ends (none of 100: 0 to 3.7 %; all: 96.3 to 100 %),
 * and where it can't say (no samples: 0 to 1). */
static void test_share_interval(void **state)
{
    (void)state;
    double lo, hi;
    tp_share_interval(8, 625, TP_Z95, &lo, &hi);
    assert_float_equal(lo, 0.0065, 0.0001);
    assert_float_equal(hi, 0.0250, 0.0001);
    assert_true(lo < 8.0 / 625 && 8.0 / 625 < hi);
    tp_share_interval(0, 100, TP_Z95, &lo, &hi);
    assert_true(lo == 0 && fabs(hi - 0.0370) < 0.0001);
    tp_share_interval(100, 100, TP_Z95, &lo, &hi);
    assert_true(fabs(lo - 0.9630) < 0.0001 && hi == 1);
    tp_share_interval(80, 6250, TP_Z95, &lo, &hi); /* the same share, ten times the samples */
    assert_true(lo > 0.0100 && hi < 0.0160);
    tp_share_interval(3, 0, TP_Z95, &lo, &hi);
    assert_true(lo == 0 && hi == 1);
    tp_share_interval(7, 5, TP_Z95, &lo, &hi); /* k over n: as n */
    assert_true(hi == 1 && lo > 0.5);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Selection gives the same percentiles as sorting, for sizes around the
 * small-range cut-off, heavy duplicates, sorted or reversed input, and an
 * organ pipe (up, then down), a shape against median-of-three pivots that
 * the introselect's fallback sort ends. */
static void test_stats_match_sorting(void **state)
{
    (void)state;
    unsigned seed = 7;
    const size_t sizes[] = {1, 2, 3, 17, 18, 100, 1001, 50000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (int kind = 0; kind < 5; kind++) {
            size_t n = sizes[s];
            double *v = malloc(n * sizeof *v), *ref = malloc(n * sizeof *ref);
            for (size_t i = 0; i < n; i++) {
                double r = (double)(rand_r(&seed) % 1000);
                v[i] = kind == 0   ? r
                       : kind == 1 ? (double)(rand_r(&seed) % 3)
                       : kind == 2 ? (double)i
                       : kind == 3 ? (double)(n - i)
                                   : (double)(i < n / 2 ? i : n - i);
                ref[i] = v[i];
            }
            qsort(ref, n, sizeof *ref, cmp_double);
            tp_stats st;
            tp_stats_compute(v, n, &st);
            assert_true(st.p5 == tp_quantile_sorted(ref, n, 0.05));
            assert_true(st.p50 == tp_quantile_sorted(ref, n, 0.50));
            assert_true(st.p95 == tp_quantile_sorted(ref, n, 0.95));
            assert_true(st.min == ref[0] && st.max == ref[n - 1]);
            free(v);
            free(ref);
        }
    }
}

/* An option table: each kind takes its value, refuses what is out of
 * bounds with 2, and the operands' count is held. */
static void test_option_table(void **state)
{
    (void)state;
    static const char *const colours[] = {"red", "green", NULL};
    bool flag;
    const char *text;
    int colour;
    double seconds;
    long count;
    const tp_option options[] = {
        TP_FLAG('f', "flag", "a flag", &flag),
        TP_STRING('t', "text", "TEXT", "a text", &text),
        TP_CHOICE(0, "colour", "COLOUR", "red or green", &colour, colours),
        TP_NUMBER('s', "seconds", "S", "0.5 to 2", &seconds, 0.5, 2, "seconds"),
        TP_INTEGER(0, "count", "N", "1 to 9", &count, 1, 9, NULL),
    };
    const tp_command cmd = {.name = "t",
                            .usage = "usage: trainprof t\n",
                            TP_OPTION_TABLE(options),
                            .min_operands = 1,
                            .max_operands = 2,
                            .operands = "a file"};
    char *ok[] = {"t",   "-f",      "--text=x", "--colour", "green", "-s",
                  "1.5", "--count", "9",        "a",        NULL};
    int first = 0;
    flag = false, text = NULL, colour = 0, seconds = 0, count = 0;
    assert_int_equal(tp_options_parse(&cmd, 10, ok, &first), TP_OPTIONS_OK);
    assert_true(flag && strcmp(text, "x") == 0 && colour == 1 && seconds == 1.5 && count == 9);
    assert_int_equal(first, 9);
    char *refused[][4] = {
        {"t", "--colour", "blue", "a"}, {"t", "-s", "3", "a"},      {"t", "--count", "1.5", "a"},
        {"t", "--count", "", "a"},      {"t", "--bogus", "a", "a"}, {"t", "a", "b", "c"},
        {"t", "-f", "-f", "-f"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        assert_int_equal(tp_options_parse(&cmd, 4, refused[i], &first), TP_OPTIONS_REFUSED);
    char *missing[] = {"t", "-t", NULL};
    assert_int_equal(tp_options_parse(&cmd, 2, missing, &first), TP_OPTIONS_REFUSED);
}

static void test_units(void **state)
{
    (void)state;
    char b[32];
    tp_format_value(b, sizeof b, "percent", 45.06);
    assert_string_equal(b, "45.1 %");
    tp_format_value(b, sizeof b, "bytes", 3.5 * 1024 * 1024 * 1024);
    assert_string_equal(b, "3.50 GiB");
    tp_format_value(b, sizeof b, "bytes_per_s", 120.5e6);
    assert_string_equal(b, "120 MB/s");
    tp_format_value(b, sizeof b, "bytes_per_s", 1.5e6);
    assert_string_equal(b, "1.50 MB/s");
    tp_format_value(b, sizeof b, "watts", 300);
    assert_string_equal(b, "300.0 W");
    tp_format_value(b, sizeof b, "joules", 12346);
    assert_string_equal(b, "12.35 kJ");
    tp_format_value(b, sizeof b, "count", NAN);
    assert_string_equal(b, "-");
    tp_format_duration(b, sizeof b, 185);
    assert_string_equal(b, "3 min 05 s");
    /* figures from a crafted file, past any int (the fuzzer's finding) */
    tp_format_duration(b, sizeof b, 5.55556e14);
    assert_string_equal(b, "154321111111 h 06 min");
    tp_format_duration(b, sizeof b, 1e300);
    assert_string_equal(b, "1e+300 s");
    /* a place in the source: its line where known, none written as 0 */
    tp_format_place(b, sizeof b, "/usr/lib/torch/optim/optimizer.py", 115);
    assert_string_equal(b, "optim/optimizer.py:115");
    tp_format_place(b, sizeof b, "/usr/lib/torch/optim/optimizer.py", 0);
    assert_string_equal(b, "optim/optimizer.py");
}

static void count_pair(void *ctx, const char *key, const char *value)
{
    int *n = ctx;
    *n += strcmp(key, "k") == 0 && strcmp(value, "v\"\u00e9") == 0 ? 1 : 100;
}

static void count_item(void *ctx, const char *value)
{
    int *n = ctx;
    *n += strcmp(value, "a") == 0 || strcmp(value, "b c") == 0 ? 1 : 100;
}

/* The strict reader of labels and argv: the shapes trainprof writes, and
 * nothing more (a spliced key, a number, trailing text). */
static void test_json_read(void **state)
{
    (void)state;
    int n = 0;
    assert_true(tp_json_flat_object(" { \"k\" : \"v\\\"\\u00e9\" } ", count_pair, &n));
    assert_int_equal(n, 1);
    n = 0;
    assert_true(tp_json_flat_object("{}", count_pair, &n) && n == 0);
    assert_true(tp_json_string_array("[\"a\", \"b c\"]", count_item, &n) && n == 2);
    assert_true(tp_json_string_array("[]", count_item, &n));
    const char *bad_objects[] = {
        "{\"k\":1}", "{}, \"x\": true", "{\"k\":\"v\"", "{\"k\" \"v\"}", "", "[]", NULL};
    for (int i = 0; bad_objects[i]; i++)
        assert_false(tp_json_flat_object(bad_objects[i], count_pair, &n));
    const char *bad_arrays[] = {"[\"a\"], \"x\"", "[\"a\",]", "[1]", "[\"a\" \"b\"]", "{}", NULL};
    for (int i = 0; bad_arrays[i]; i++)
        assert_false(tp_json_string_array(bad_arrays[i], count_item, &n));
    assert_false(tp_json_flat_object(NULL, count_pair, &n));
}

static void join_pair(void *ctx, const char *key, const char *value)
{
    char *out = ctx;
    size_t len = strlen(out);
    snprintf(out + len, 256 - len, "%s=%s;", key, value);
}

/* Only strings in a flat object of labels: a number is refused. */
static void test_json_read_refuses_what_is_not_a_string(void **state)
{
    (void)state;
    char out[256] = "";
    assert_false(tp_json_flat_object("{\"k\":1}", join_pair, out));
    assert_false(tp_json_flat_object("{\"k\":null}", join_pair, out));
}

static void test_json_writer(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    json_writer w;
    json_init(&w, f);
    json_object_begin(&w);
    json_key(&w, "a");
    json_array_begin(&w);
    json_int(&w, 1);
    json_double(&w, 0.5);
    json_double(&w, NAN);
    json_string(&w, "q\"\x01");
    json_array_end(&w);
    json_key(&w, "b");
    json_raw(&w, "{}");
    json_key(&w, "c");
    json_bool(&w, true);
    json_object_end(&w);
    fclose(f);
    assert_string_equal(text, "{\"a\":[1,0.5,null,\"q\\\"\\u0001\"],\"b\":{},\"c\":true}");
    free(text);
}

static void test_model_facts(void **state)
{
    (void)state;
    char path[] = "/tmp/tp-facts-XXXXXX", hint[512];
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("dtype=float32\ndevice=cuda\ncapability=8.0\nautocast=0\nfuture_key=1\n", f);
    fclose(f);
    tp_model_facts m;
    assert_true(tp_model_facts_read(path, &m));
    assert_string_equal(m.dtype, "float32");
    assert_int_equal(m.cc_major, 8);
    assert_int_equal(m.autocast, 0);
    assert_int_equal(tp_precision_case_of(&m), TP_PRECISION_TENSOR_CORES);
    assert_true(tp_precision_words(hint, sizeof hint, &m));
    assert_non_null(strstr(hint, "tensor cores (compute capability 8.0)"));
    assert_non_null(strstr(hint, "1.5-5x"));
    m.autocast = 1; /* already mixed precision: no 1.5-5x promise */
    assert_true(tp_precision_words(hint, sizeof hint, &m));
    assert_null(strstr(hint, "1.5-5x"));
    assert_non_null(strstr(hint, "autocast"));
    m.autocast = 0, m.cc_major = 6, m.cc_minor = 1; /* Pascal: no tensor cores */
    assert_true(tp_precision_words(hint, sizeof hint, &m));
    assert_non_null(strstr(hint, "without tensor cores"));
    snprintf(m.dtype, sizeof m.dtype, "bfloat16");
    assert_true(tp_precision_words(hint, sizeof hint, &m));
    assert_non_null(strstr(hint, "already runs in bfloat16"));
    snprintf(m.device, sizeof m.device, "cpu");
    assert_false(tp_precision_words(hint, sizeof hint, &m));
    assert_string_equal(hint, "");
    unlink(path);
    assert_false(tp_model_facts_read(path, &m)); /* missing file */
}

/* Three series over 10 s in 2 buckets: per bucket the mean of each series'
 * points, then the lowest, median and highest of those, at the bucket's middle;
 * a series without points in a bucket doesn't count there. */
static void test_envelope(void **state)
{
    (void)state;
    const double x0[] = {1, 2, 6}, y0[] = {10, 20, 5}; /* bucket means 15, 5 */
    const double x1[] = {3}, y1[] = {1};               /* 1, none */
    const double x2[] = {4, 9}, y2[] = {7, 9};         /* 7, 9 */
    const double *xs[] = {x0, x1, x2}, *ys[] = {y0, y1, y2};
    const size_t ns[] = {3, 1, 2};
    tp_envelope e;
    assert_true(tp_envelope_build(xs, ys, ns, 3, 2, 10, &e));
    assert_int_equal(e.n, 2);
    assert_float_equal(e.x[0], 2.5, 1e-12);
    assert_float_equal(e.low[0], 1, 1e-12);
    assert_float_equal(e.median[0], 7, 1e-12);
    assert_float_equal(e.high[0], 15, 1e-12);
    assert_float_equal(e.x[1], 7.5, 1e-12);
    assert_float_equal(e.low[1], 5, 1e-12);
    assert_float_equal(e.median[1], 7, 1e-12); /* of 5 and 9 */
    assert_float_equal(e.high[1], 9, 1e-12);
    tp_envelope_free(&e);
    assert_true(tp_envelope_build(xs, ys, ns, 0, 2, 10, &e) && e.n == 0);
}

static int cmp_double_asc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median found by selection is the sorted middle, for odd and even
 * counts, repeated values and runs already in order or reversed. */
static void test_envelope_median_is_the_sorted_middle(void **state)
{
    (void)state;
    unsigned seed = 12345;
    for (size_t rows = 1; rows <= 41; rows++)
        for (int shape = 0; shape < 4; shape++) {
            double means[41], sorted[41];
            for (size_t i = 0; i < rows; i++) {
                seed = seed * 1103515245u + 12345u;
                double v = shape == 0   ? (double)(seed >> 16 & 1023)
                           : shape == 1 ? (double)(seed >> 16 & 3) /* many equal */
                           : shape == 2 ? (double)i
                                        : (double)(rows - i);
                means[i] = sorted[i] = v;
            }
            qsort(sorted, rows, sizeof *sorted, cmp_double_asc);
            double want =
                rows % 2 ? sorted[rows / 2] : (sorted[rows / 2 - 1] + sorted[rows / 2]) / 2;
            tp_envelope e;
            assert_true(tp_envelope_from_rows(means, rows, 1, 10, &e));
            assert_int_equal(e.n, 1);
            assert_float_equal(e.median[0], want, 1e-12);
            assert_float_equal(e.low[0], sorted[0], 1e-12);
            assert_float_equal(e.high[0], sorted[rows - 1], 1e-12);
            tp_envelope_free(&e);
        }
}

static void test_prom_format(void **state)
{
    (void)state;
    char out[128];
    tp_prom_labels("{\"gpu\":\"0\",\"device\":\"a\\\"b\\\\c\"}", out, sizeof out);
    assert_string_equal(out, "gpu=\"0\",device=\"a\\\"b\\\\c\"");
    assert_int_equal(tp_prom_labels("{}", out, sizeof out), 0);
    tp_prom_metric m;
    assert_true(tp_prom_metric_of("cpu_util_percent", &m));
    assert_string_equal(m.name, "trainprof_cpu_util_ratio");
    assert_true(m.kind == TP_PROM_GAUGE && m.scale == 0.01);
    assert_true(tp_prom_metric_of("disk_read_bytes_per_s", &m));
    assert_string_equal(m.name, "trainprof_disk_read_bytes_total");
    assert_true(m.kind == TP_PROM_COUNTER && m.integrate);
    assert_null(strstr(m.help, "per second"));
    assert_true(tp_prom_metric_of("net_link_speed_bytes_per_s", &m)); /* a speed: a gauge */
    assert_string_equal(m.name, "trainprof_net_link_speed_bytes");
    assert_true(m.kind == TP_PROM_GAUGE && !m.integrate && m.scale == 1.0);
    assert_true(tp_prom_metric_of("gpu_sm_clock_mhz", &m));
    assert_string_equal(m.name, "trainprof_gpu_sm_clock_hertz");
    assert_true(tp_prom_metric_of("gpu_energy_joules", &m));
    assert_string_equal(m.name, "trainprof_gpu_energy_joules_total");
    assert_true(tp_prom_metric_of("proc_count", &m));
    assert_string_equal(m.name, "trainprof_proc_processes");
    assert_false(tp_prom_metric_of("no_such_metric", &m));
}

/* Text from a training made safe to write: invalid bytes as U+FFFD, control
 * characters as escapes, and a line cut to a terminal's columns on a
 * character's boundary, counting characters, not bytes. */
static void test_utf8(void **state)
{
    (void)state;
    char out[64];
    tp_utf8_clean(out, sizeof out,
                  "a\xff"
                  "b");
    assert_string_equal(out, "a\xef\xbf\xbd"
                             "b");
    tp_text_escape(out, sizeof out, "load\n\x1b[2J(x)");
    assert_string_equal(out, "load\\x0a\\x1b[2J(x)");
    tp_utf8_clean(out, 3, "\xe2\x82\xac"); /* a euro sign does not fit in 2 bytes: left out */
    assert_string_equal(out, "");
    char line[] = "a\xc3\xb1"
                  "b\xe2\x82\xac"
                  "c";
    tp_utf8_cut(line, 3);
    assert_string_equal(line, "a\xc3\xb1"
                              "b");
    char euros[] = "\xe2\x82\xac\xe2\x82\xac";
    tp_utf8_cut(euros, 1);
    assert_string_equal(euros, "\xe2\x82\xac");
    char shorter[] = "abc";
    tp_utf8_cut(shorter, 80);
    assert_string_equal(shorter, "abc");
    tp_utf8_cut(shorter, 0);
    assert_string_equal(shorter, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_numbers),
        cmocka_unit_test(test_counter_delta),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_share_interval),
        cmocka_unit_test(test_option_table),
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_stats_match_sorting),
        cmocka_unit_test(test_json_writer),
        cmocka_unit_test(test_json_read),
        cmocka_unit_test(test_json_read_refuses_what_is_not_a_string),
        cmocka_unit_test(test_model_facts),
        cmocka_unit_test(test_prom_format),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_envelope),
        cmocka_unit_test(test_envelope_median_is_the_sorted_middle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
