/* test_basics.c: parsing, counters, labels, statistics, units, JSON, model facts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/downsample.h"
#include "analyze/stack_own.h"
#include "render/remedy_words.h"
#include "render/verdict_words.h"
#include "store/model_facts_file.h"
#include "core/stack_runs.h"
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

/* trainprof's own frames are taken for the user's frame above them; ids
 * stay, a root frame of ours (nothing above) stays as it is. */
static void test_own_frames_are_hidden_in_the_stack_tree(void **state)
{
    (void)state;
    assert_true(tp_stack_file_ours("/v/lib/python3.11/site-packages/trainprof/torch.py"));
    assert_true(tp_stack_file_ours("/work/main/python/trainprof/_autoload.py"));
    assert_true(tp_stack_file_ours("/v/site-packages/trainprof/patches/loop.py"));
    assert_true(tp_stack_file_ours("/v/site-packages/trainprof/steps/tracker.py"));
    assert_false(tp_stack_file_ours("/home/u/patches/loop.py"));         /* not ours */
    assert_false(tp_stack_file_ours("/home/u/trainprof/models/net.py")); /* a user's */
    assert_false(tp_stack_file_ours("/home/u/mytrainprof/patches/x.py"));
    assert_false(tp_stack_file_ours("/home/u/trainprof/train.py")); /* a user's file */
    assert_false(tp_stack_file_ours("/home/u/mytrainprof/_x.py"));
    assert_false(tp_stack_file_ours("trainprof/_x.py") || tp_stack_file_ours(NULL));
    char *function[] = {"main", "_patch_dataloader.<locals>.__iter__", "__next__", "__getitem__"};
    char *file[] = {"/home/u/train.py", "/v/site-packages/trainprof/torch.py",
                    "/v/site-packages/torch/utils/data/dataloader.py", "/home/u/train.py"};
    uint32_t parent[] = {0, 1, 2, 3, 0}, frame[] = {1, 2, 3, 4, 2};
    int32_t line[] = {10, 50, 600, 20, 51};
    tp_stack_tree t = {parent, frame, line, 5, function, file, 4};
    tp_stack_tree_hide_own(&t);
    /* node 2 (ours) is main's copy; __next__ hangs from main */
    assert_int_equal(frame[1], 1);
    assert_int_equal(line[1], 10);
    assert_int_equal(parent[1], 0);
    assert_int_equal(parent[2], 1);
    assert_int_equal(parent[3], 3);
    assert_int_equal(frame[3], 4);
    /* ours at the root: nothing of the user's above, kept */
    assert_int_equal(frame[4], 2);
    assert_int_equal(parent[4], 0);
}

/* What a module of ours that works for trainprof (device times) calls is our
 * work: torch's CUDA event under our poll is taken for the user's frame, as
 * is all below it; a wrapper in that module (capture_begin) leaves the call
 * it stands in for to the user. */
static void test_what_our_own_work_calls_is_hidden_too(void **state)
{
    (void)state;
    char *function[] = {"main",
                        "DeviceTimes.poll",
                        "Event.elapsed_time",
                        "synchronize",
                        "patch_graph_capture.<locals>.capture_begin",
                        "CUDAGraph.capture_begin",
                        "poll",
                        "elapsed_time"};
    char *file[] = {"/home/u/train.py",
                    "/v/site-packages/trainprof/patches/device.py",
                    "/v/site-packages/torch/cuda/streams.py",
                    "/v/site-packages/torch/cuda/__init__.py",
                    "/v/site-packages/trainprof/patches/device.py",
                    "/v/site-packages/torch/cuda/graphs.py",
                    "/v/lib/python3.10/site-packages/trainprof/patches/device.py",
                    "/v/lib/python3.10/site-packages/torch/cuda/streams.py"};
    /* 1 main, 2 poll, 3 elapsed_time, 4 synchronize; 5 capture_begin (ours),
     * 6 torch's capture_begin; 7 3.10's poll (no qualified name), 8 its callee;
     * 9 our poll at the root (no user's frame above): kept, its callee is it */
    uint32_t parent[] = {0, 1, 2, 3, 1, 5, 1, 7, 0, 9};
    uint32_t frame[] = {1, 2, 3, 4, 5, 6, 7, 8, 2, 3};
    int32_t line[] = {10, 100, 200, 300, 400, 500, 101, 201, 100, 200};
    tp_stack_tree t = {parent, frame, line, 10, function, file, 8};
    assert_true(tp_stack_frame_works_for_us(file[1], function[1]));
    assert_true(tp_stack_frame_works_for_us(file[6], function[6]));
    assert_false(tp_stack_frame_works_for_us(file[4], function[4])); /* a wrapper */
    assert_false(tp_stack_frame_works_for_us(file[2], function[2])); /* torch's */
    assert_false(tp_stack_frame_works_for_us("/home/u/patches/device.py", "poll"));
    assert_false(tp_stack_frame_works_for_us("/v/trainprof/patches/loop.py", "__next__"));
    assert_false(tp_stack_frame_works_for_us(NULL, "poll") ||
                 tp_stack_frame_works_for_us(file[1], NULL));
    tp_stack_tree_hide_own(&t);
    for (int id = 2; id <= 4; id++) { /* poll and all below it: main's copies */
        assert_int_equal(frame[id - 1], 1);
        assert_int_equal(line[id - 1], 10);
        assert_int_equal(parent[id - 1], 0);
    }
    assert_int_equal(frame[4], 1); /* the wrapper: main's copy */
    assert_int_equal(frame[5], 6); /* what it wraps: the user's, under main */
    assert_int_equal(parent[5], 1);
    assert_int_equal(frame[6], 1); /* 3.10's poll and its callee: main's */
    assert_int_equal(frame[7], 1);
    assert_int_equal(parent[7], 0);
    assert_int_equal(frame[8], 2); /* nothing of the user's above: kept */
    assert_int_equal(frame[9], 2);
    assert_int_equal(parent[9], 0);
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

/* Sampled stacks through a real sink: frames interned once, stacks as a
 * tree whose shared outer frames are one node, each node defined once in
 * the batch that first uses it, a sample naming its innermost node, and a
 * thread's identical samples in a row one run, one row however long: handed
 * to the writer when it ends, after a checkpoint's time, and at the end,
 * under its row id each time. */
static void test_stack_tree(void **state)
{
    (void)state;
    tp_sink *sink = tp_sink_new(0);
    tp_thread_info info = {.pid = 10, .tid = 10, .rank = 0};
    uint32_t thread = tp_sink_thread(sink, &info);
    uint32_t main_f = tp_sink_frame(sink, "main\nrun.py"),
             load = tp_sink_frame(sink, "load\nrun.py");
    assert_int_equal(tp_sink_frame(sink, "main\nrun.py"), main_f); /* the same id again */
    uint32_t a[] = {load, main_f}, b[] = {main_f};                 /* innermost first */
    int32_t la[] = {7, 3}, lb[] = {4};
    tp_sink_stack(sink, thread, 100, 11, 0, TP_STACK_STATE_KNOWN, a, la, 2);
    tp_sink_stack(sink, thread, 150, 12, 0, 0, b, lb, 1); /* another thread between */
    tp_sink_stack(sink, thread, 200, 11, 0, TP_STACK_STATE_KNOWN, a, la, 2);
    tp_sink_stack(sink, thread, 300, 11, 0, TP_STACK_STATE_KNOWN, a, la, 2);
    tp_sink_stack(sink, thread, 400, 11, 0, 0, a, la, 2); /* waiting now: a new run */
    tp_sink_stack(sink, thread, 500, 11, 0, TP_STACK_STATE_KNOWN, a, la, 2);
    tp_batch batch = {0};
    tp_sink_take(sink, &batch);
    assert_int_equal(batch.frames.len, 2);
    /* the runs that ended; thread 12's and 11's last are still open */
    assert_int_equal(batch.stacks.len, 2);
    const tp_stack_sample *run = &batch.stacks.items[0];
    assert_true(run->tid == 11 && run->t_ns == 100 && run->count == 3 && run->span_ns == 200);
    assert_true(batch.stacks.items[1].t_ns == 400 && batch.stacks.items[1].count == 1 &&
                batch.stacks.items[1].state == 0);
    uint64_t first_row = run->row;
    assert_true(first_row > 0 && batch.stacks.items[1].row != first_row);
    /* main@3 -> load@7 (two nodes), and main@4 (a third: another line) */
    assert_int_equal(batch.stack_nodes.len, 3);
    const tp_stack_node *root = &batch.stack_nodes.items[0], *leaf = &batch.stack_nodes.items[1];
    assert_true(root->parent == 0 && root->frame == main_f && root->line == 3);
    assert_true(leaf->parent == root->id && leaf->frame == load && leaf->line == 7);
    assert_int_equal(batch.stacks.items[0].node, leaf->id);
    assert_int_equal(batch.stacks.items[1].node, leaf->id);
    uint32_t leaf_id = leaf->id;
    /* thread 11's open run grows by repeats (its CPU time did not move): past
     * a checkpoint's time it is handed, then again under the same row */
    tp_sink_stack_repeat(sink, thread, 600, 11, 4);
    tp_batch_clear(&batch);
    tp_sink_take(sink, &batch);
    assert_int_equal(batch.stacks.len, 0);
    uint64_t later = 500 + TP_STACK_RUN_CHECKPOINT_NS;
    tp_sink_stack_repeat(sink, thread, later, 11, 1000);
    tp_sink_stack(sink, thread, later + 10, 11, 0, TP_STACK_STATE_KNOWN, a, la, 2);
    tp_batch_clear(&batch);
    tp_sink_take(sink, &batch);
    assert_int_equal(batch.stack_nodes.len, 0); /* known nodes are not defined again */
    /* thread 11's run as it was at the checkpoint, and thread 12's, quiet
     * for a checkpoint's time by the latest sample */
    assert_int_equal(batch.stacks.len, 2);
    run = &batch.stacks.items[0];
    assert_true(run->tid == 11 && run->t_ns == 500 && run->count == 1005 &&
                run->span_ns == later - 500);
    assert_int_equal(run->node, leaf_id);
    assert_true(batch.stacks.items[1].tid == 12 && batch.stacks.items[1].count == 1);
    uint64_t row = run->row;
    tp_sink_stack(sink, thread, later + 20, 11, 0, TP_STACK_STATE_KNOWN, a, la, 2);
    /* a repeat for a thread with no run is lost */
    tp_sink_stack_repeat(sink, thread, 700, 13, 5);
    /* a sample of a thread the sink could not keep counts as lost */
    tp_sink_stack(sink, 0, 500, 11, 0, 0, a, la, 2);
    uint64_t lost[TP_LOST_KINDS];
    tp_sink_losses(sink, lost);
    assert_int_equal(lost[TP_LOST_EVENTS], 6);
    /* the end hands every open run that grew since: thread 11's, same row */
    tp_sink_close(sink);
    tp_batch_clear(&batch);
    tp_sink_take(sink, &batch);
    assert_int_equal(batch.stacks.len, 1);
    run = &batch.stacks.items[0];
    assert_true(run->row == row && run->count == 1007 && run->span_ns == later + 20 - 500);
    tp_batch_free(&batch);
    tp_sink_free(sink);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_numbers),
        cmocka_unit_test(test_counter_delta),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_option_table),
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_stats_match_sorting),
        cmocka_unit_test(test_json_writer),
        cmocka_unit_test(test_json_read),
        cmocka_unit_test(test_json_read_refuses_what_is_not_a_string),
        cmocka_unit_test(test_model_facts),
        cmocka_unit_test(test_prom_format),
        cmocka_unit_test(test_envelope),
        cmocka_unit_test(test_envelope_median_is_the_sorted_middle),
        cmocka_unit_test(test_own_frames_are_hidden_in_the_stack_tree),
        cmocka_unit_test(test_what_our_own_work_calls_is_hidden_too),
        cmocka_unit_test(test_stack_tree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
