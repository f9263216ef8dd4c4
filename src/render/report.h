/* report.h: rendering a run summary as text for people or JSON for programs. */
#ifndef TP_RENDER_REPORT_H
#define TP_RENDER_REPORT_H

#include <stdio.h>

#include "analyze/run_facts.h"
#include "analyze/summary.h"
#include "analyze/verdicts.h"
#include "util/json_writer.h"

/* The report as text. With more than TP_REPORT_AGENTS_MAX agents, their
 * system metrics in one table across agents, and with more than
 * TP_NOTABLE_RANKS ranks, the per-rank tables of the notable ranks only
 * (tp_ranks_notable); all: every agent's and every rank's tables. System
 * metrics are shown over each agent's training steps where it has them (as
 * the rules of thumb judge them), unless whole_run. */
#define TP_REPORT_AGENTS_MAX 4
void tp_report_text(FILE *out, const tp_summary *s, const tp_verdicts *v, bool all, bool whole_run);

/* The system metrics of every agent in one table: per metric, the median of
 * the agents' means (of every device's, for per-device metrics) and the
 * lowest and highest, named; over the training steps unless whole_run. */
void tp_report_agents_text(FILE *out, const tp_summary *s, bool whole_run);

/* What a per-device metric compares across agents ("GPUs", "disks", "links"):
 * one with no agent total, whose every device of every agent is compared;
 * NULL for the others (their agent totals are compared). */
const char *tp_device_kind(const char *metric);

/* The report as one JSON object. The verdicts (analyze/verdicts.h) are the
 * caller's to build, as every fact a renderer shows. */
void tp_report_json(FILE *out, const tp_summary *s, const tp_verdicts *v);

/* The Timings part: regions per rank, steps, epochs, dropped events. */
void tp_report_timings_text(FILE *out, const tp_summary *s, bool all);
void tp_report_timings_json(json_writer *w, const tp_summary *s);

/* Ranks side by side, once two or more marked steps: in text a line each,
 * or past TP_RANKS_LISTED ranks (unless all) their distribution and those
 * that stand out; in JSON every rank that did (null when none). */
void tp_report_ranks_text(FILE *out, const tp_summary *s, bool all);
void tp_report_ranks_json(json_writer *w, const tp_summary *s);

/* Inside the phases: per rank and phase, the functions the sampled stacks
 * found most (s->stacks, the summary's part TP_PART_STACKS); text only when
 * there are some, JSON "stacks" always (an empty list without). */
void tp_report_stacks_text(FILE *out, const tp_summary *s);
void tp_report_stacks_json(json_writer *w, const tp_summary *s);

/* Inside the steps: the capture windows' operators per rank and phase,
 * kernels, the GPU's idle time and memory (report_ops.c); text only when
 * there are windows, JSON's "windows", "ops", "kernels" and "gpu_idle"
 * always (empty lists without). */
void tp_report_ops_text(FILE *out, const tp_summary *s);
void tp_report_ops_json(json_writer *w, const tp_summary *s);
/* Why a capture window was taken, in words ("scheduled", "on demand",
 * "after a slow step"; "?" for another number); of n windows ("after slow
 * steps" for more than one). */
const char *tp_ops_reason_words(int reason);
const char *tp_ops_reason_words_of(int reason, int n);
/* The operators a compute-bound rank's biggest computing phases spent
 * their time in, as a sentence for its verdict (" Inside (PyTorch's
 * profiler): backward: convolution_backward 41%, ..."); "" without windows. */
void tp_ops_cite(char *out, size_t cap, const tp_ops_facts *f, int rank);

/* Where a host-bound rank's host was while its GPU sat idle in the capture
 * windows, as a sentence for its verdict (" While the GPU idled, the host
 * was in backward 45% (_engine_run_backward, autograd/graph.py:869), ...");
 * "" without a window of its GPU's work. */
void tp_ops_idle_cite(char *out, size_t cap, const tp_ops_facts *f, int rank);

/* Where an input- (input) or compute-bound rank's time goes in the code, as
 * a sentence for its verdict (" Inside: the DataLoader workers' time goes to
 * decode (io.py:12) 58%, ..."; a function whose samples mostly waited is
 * marked "waiting", or "waiting on storage"): its workers' or dataloader_next's samples, or its
 * busiest computing phase's; "" without stacks. */
void tp_stacks_cite(char *out, size_t cap, const tp_stack_facts *f, int rank, bool input);

/* What samples of a known state mostly were: on a CPU (half or more
 * running), waiting on storage (most of the waiting ones in state D),
 * waiting; unknown where no state was known. Its words ("" unknown) and its
 * JSON key (NULL unknown), by the value. */
typedef enum { TP_DOING_UNKNOWN, TP_DOING_ON_CPU, TP_DOING_WAITING, TP_DOING_STORAGE } tp_doing;
tp_doing tp_doing_of(double known, double on_cpu, double blocked);
extern const char *const tp_doing_words[];
extern const char *const tp_doing_keys[];

/* Whether a group's share in state D is said (from 5 % of its samples of
 * known state), by the report and the page alike. */
bool tp_stack_group_blocked_said(const tp_stack_group *g);

/* "15:27:11" (UTC) of t_s seconds into the run, or "" when the run's start
 * is unknown. */
void tp_report_wall_time(char *out, size_t cap, const tp_run_inventory *inv, double t_s);
/* "D.__getitem__ (hang_ddp.py:13)" of a stack node, or "" without one. */
void tp_report_frame_text(char *out, size_t cap, const tp_stack_tree *t, uint32_t node);

/* Where a thread was: node's frame, "loop (train.py:20)", and where outer
 * (its caller outside the standard library, 0 none) is another node, that
 * one first: "loop (train.py:20) calling Condition.wait (threading.py:320)";
 * "" for node 0. */
void tp_report_place(char *out, size_t cap, const tp_stack_tree *t, uint32_t node, uint32_t outer);

/* The processes that died and the run's stop (report_ends.c): lines for "In
 * short" (deaths first, the stop after the stalls), a section with each one's end, "deaths" and
 * "stop" in JSON. */
void tp_report_ends_answer(FILE *out, const tp_summary *s, const tp_verdicts *v);
void tp_report_stop_answer(FILE *out, const tp_summary *s);

/* What trainprof's own work cost (analyze/own_cost.h): a line of "In
 * short" (with [cost] and the option that lowers it over the budget), and
 * "own_cost" in JSON. Nothing in words for a run without steps. */
void tp_report_own_answer(FILE *out, const tp_summary *s);
void tp_report_own_json(json_writer *w, const tp_summary *s);
void tp_report_ends_text(FILE *out, const tp_summary *s, const tp_verdicts *v);
void tp_report_ends_json(json_writer *w, const tp_summary *s);

/* The course of the run (report_course.c): a stall's lines for "In short",
 * the section that says where every stalled rank's threads were, and
 * "stalls" in JSON (an empty list when none). */
void tp_report_course_answer(FILE *out, const tp_summary *s);
void tp_report_course_text(FILE *out, const tp_summary *s);
void tp_report_course_json(json_writer *w, const tp_summary *s);
/* The changes of pace (s->regimes): a line for "In short" and a section when
 * there were some; "regimes" in JSON always. */
void tp_report_regimes_answer(FILE *out, const tp_summary *s);
void tp_report_regimes_text(FILE *out, const tp_summary *s);
void tp_report_regimes_json(json_writer *w, const tp_summary *s);

/* Verdicts: each rule of thumb that fired, with its evidence. */
void tp_report_verdicts_text(FILE *out, const tp_summary *s, const tp_verdicts *v);

/* The answer first (report_answer.c): what the run was (its steps, their
 * rate, the split of a step) and the main verdict with the one thing to
 * try, in a few lines under "In short"; the detail follows it. */
void tp_report_answer_text(FILE *out, const tp_summary *s, const tp_verdicts *v);
/* What the run was, in a line: "32 steps, 17 ms each, 58.9 steps/s, 3770
 * samples/s; a step: train_batch 85%, ..." (the first rank's steps; its
 * window's split where the ranks table has it, else its standard phases'
 * shares). False (out empty) when no steps were found. */
bool tp_answer_steps(char *out, size_t cap, const tp_summary *s);
/* Prints "  head" then text, wrapped at about 100 columns, later lines
 * indented by 4. */
void tp_report_wrapped(FILE *out, const char *head, const char *text);
/* A drift (analyze/regimes.h) as JSON: its quarters' steps and step
 * times, or null where the steps did not drift. */
void tp_report_drift_json(json_writer *w, const tp_regimes_drift *d);

/* Why a Python command has no timings at all (tp_run_facts.package_unloaded, no
 * instrumented process): said by the report and by record's closing lines. */
#define TP_PACKAGE_UNLOADED_WORDS                                                        \
    "the command ran Python, but no process of it loaded trainprof's Python package "    \
    "(installed into another Python than the one that ran, or its import failed at "     \
    "start-up: Python prints that error, \"Error processing line 1 of "                  \
    "...trainprof-autoload.pth\", on the command's standard error). Install trainprof "  \
    "into that Python, or run the one that has it (trainprof record -- /path/to/python " \
    "train.py). A free-threaded Python running without the GIL is left without it on "   \
    "purpose, and says so on that standard error. Only the system metrics were "         \
    "recorded."
void tp_report_verdicts_json(json_writer *w, const tp_summary *s, const tp_verdicts *v);

/* Why an incomplete run is, as one clause: the recorder stopped early, or
 * its file was not written after a time (with the command's exit status
 * where known); naming the agent of a merged run. */
void tp_run_facts_incomplete(const tp_run_facts *f, char *buf, size_t cap);

/* Where a run's stored summary was made by another trainprof's analysis
 * (its inventory's summary_foreign), what a reading command prints on
 * stderr, one line: the figures made again from the rows, and how to store
 * them; or, in a summary-only merge, that they are the other one's. Prints
 * nothing otherwise. who: the command's name. */
void tp_summary_source_note(FILE *err, const char *who, const tp_run_inventory *inv);

/* Agents of a run whose hosts are alike (kernel, CPUs, memory, cgroup
 * limits). */
typedef struct tp_host_group {
    char description[400]; /* "Linux 6.1.0 x86_64, 32 CPUs (AMD EPYC 7763), 503.2 GiB memory" */
    char agents[200];      /* "node-0, node-1, node-2, node-3 and 4 more", "all 8 agents" */
    size_t count;          /* how many agents */
} tp_host_group;

/* The run's hosts, described from each agent's metadata, agents alike in one
 * group, groups in the order of their first agent. Fills up to cap groups and
 * returns how many it filled; *unlisted: the agents of further groups. */
size_t tp_host_groups(const tp_run_inventory *inv, tp_host_group *out, size_t cap,
                      size_t *unlisted);

#endif
