/* `recaudit inspect FILE`: metadata and per-tensor summary of a tensor file. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/case.h"
#include "core/io.h"
#include "core/table.h"
#include "core/tensor.h"

/*
 * The file type is decided by content, not name: a .npy file starts with
 * "\x93NUMPY", anything else is read as safetensors (whose reader then
 * validates everything and names the problem).  Any safetensors file is
 * accepted, recaudit case or not; its metadata is shown in file order with
 * "op" first.  A .npy file holds one tensor, named after the file.
 *
 * Per tensor: dtype, shape, min and max over the non-NaN elements (printed
 * as the shortest decimal that reads back to the stored value), mean |x|
 * over the finite elements (long double sum), and the NaN and Inf counts.
 * Empty cells mean "no such element" (an empty or all-NaN tensor).
 *
 * Formats: text and md show the metadata, then the tensor table; csv is
 * the tensor table alone (one CSV file holds one table); json is one object
 * {"file", "format", "metadata", "tensors": [rows]}.
 */

typedef struct summary {
    double min, max, mean_abs;
    int64_t nan, inf, counted, finite;
} summary;

static void summarize(summary *s, const ra_tensor *t)
{
    long double sum = 0;
    memset(s, 0, sizeof *s);
    s->min = INFINITY;
    s->max = -INFINITY;
    for (int64_t i = 0; i < t->numel; i++) {
        double x = ra_tensor_get(t, i);
        if (isnan(x)) {
            s->nan++;
            continue;
        }
        s->counted++;
        if (x < s->min)
            s->min = x;
        if (x > s->max)
            s->max = x;
        if (isinf(x)) {
            s->inf++;
            continue;
        }
        s->finite++;
        sum += fabsl((long double)x);
    }
    s->mean_abs = s->finite ? (double)(sum / (long double)s->finite) : NAN;
}

static ra_status tensor_table(ra_table **out, const ra_tensors *ts)
{
    static const char *const headers[] = {"name", "dtype",    "shape", "min",
                                          "max",  "mean_abs", "nan",   "inf"};
    RA_TRY(ra_table_new(out, 8, headers));
    for (size_t i = 0; i < ts->n; i++) {
        const ra_tensor *t = ts->items[i];
        summary s;
        summarize(&s, t);
        char shape[160], mn[40] = "", mx[40] = "", mean[40] = "", nan[24], inf[24];
        ra_shape_format(shape, sizeof shape, t->ndim, t->shape);
        if (s.counted) {
            ra_fmt_value(mn, sizeof mn, s.min, t->dtype);
            ra_fmt_value(mx, sizeof mx, s.max, t->dtype);
        }
        if (s.finite)
            snprintf(mean, sizeof mean, "%.6g", s.mean_abs);
        snprintf(nan, sizeof nan, "%lld", (long long)s.nan);
        snprintf(inf, sizeof inf, "%lld", (long long)s.inf);
        const char *row[] = {t->name, ra_dtype_name(t->dtype), shape, mn, mx, mean, nan, inf};
        RA_TRY(ra_table_add_row(*out, row));
    }
    return RA_OK;
}

/* Metadata keys in display order: "op" first, then file order. */
static void ordered_keys(const char **keys, const ra_kv *meta)
{
    size_t k = 0;
    for (size_t i = 0; i < meta->n; i++)
        if (strcmp(meta->keys[i], "op") == 0)
            keys[k++] = meta->keys[i];
    for (size_t i = 0; i < meta->n; i++)
        if (strcmp(meta->keys[i], "op") != 0)
            keys[k++] = meta->keys[i];
}

static ra_status write_json(FILE *f, const char *path, const char *kind, const ra_kv *meta,
                            const char *const *keys, const ra_table *t)
{
    json_t *head = json_object();
    json_t *m = json_object();
    int bad = !head || !m;
    for (size_t i = 0; !bad && i < meta->n; i++)
        bad = json_object_set_new(m, keys[i], json_string(ra_kv_get(meta, keys[i]))) != 0;
    char *h = NULL, *ms = NULL;
    if (!bad) {
        json_object_set_new(head, "file", json_string(path));
        json_object_set_new(head, "format", json_string(kind));
        h = json_dumps(head, JSON_COMPACT | JSON_PRESERVE_ORDER);
        ms = json_dumps(m, JSON_COMPACT | JSON_PRESERVE_ORDER);
    }
    json_decref(head);
    json_decref(m);
    if (!h || !ms || strlen(h) < 2) {
        free(h), free(ms);
        RA_ERRORF(RA_EINVAL, "%s: metadata is not valid UTF-8, cannot write JSON", path);
    }
    /* {"file":..,"format":..} opened up to append the metadata and the
       tensor rows, which the table writer emits as a JSON array. */
    h[strlen(h) - 1] = '\0';
    fprintf(f, "%s,\n\"metadata\": %s,\n\"tensors\": ", h, ms);
    free(h), free(ms);
    RA_TRY(ra_table_write(t, f, RA_FMT_JSON));
    fputs("}\n", f);
    return RA_OK;
}

static ra_status write_report(FILE *f, ra_format fmt, const char *path, const char *kind,
                              const ra_kv *meta, const ra_tensors *ts)
{
    ra_table *t = NULL;
    const char **keys = calloc(meta->n + 1, sizeof *keys);
    if (!keys)
        RA_ERROR("inspect: out of memory", RA_ENOMEM);
    ordered_keys(keys, meta);
    ra_status st = tensor_table(&t, ts);
    if (st == RA_OK) {
        switch (fmt) {
        case RA_FMT_JSON:
            st = write_json(f, path, kind, meta, keys, t);
            break;
        case RA_FMT_CSV:
            st = ra_table_write(t, f, fmt);
            break;
        case RA_FMT_MARKDOWN:
            fprintf(f, "**%s** (%s, %zu tensor%s)\n\n", path, kind, ts->n, ts->n == 1 ? "" : "s");
            for (size_t i = 0; i < meta->n; i++)
                fprintf(f, "- %s: `%s`\n", keys[i], ra_kv_get(meta, keys[i]));
            fputs(meta->n ? "\n" : "", f);
            st = ra_table_write(t, f, fmt);
            break;
        default:
            fprintf(f, "%s: %s, %zu tensor%s\n", path, kind, ts->n, ts->n == 1 ? "" : "s");
            for (size_t i = 0; i < meta->n; i++)
                fprintf(f, "%s: %s\n", keys[i], ra_kv_get(meta, keys[i]));
            fputc('\n', f);
            st = ra_table_write(t, f, fmt);
        }
    }
    ra_table_free(t);
    free(keys);
    return st;
}

/* 1 when the file starts with the .npy magic (unreadable: 0, and the
   safetensors reader reports why). */
static int is_npy(const char *path)
{
    unsigned char magic[6];
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t n = fread(magic, 1, sizeof magic, f);
    fclose(f);
    return n == 6 && memcmp(magic, "\x93NUMPY", 6) == 0;
}

/* "dir/x.npy" -> "x" */
static void stem(char *buf, size_t len, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(buf, len, "%s", base);
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf)
        *dot = '\0';
}

static void print_help(FILE *f)
{
    fprintf(f, "usage: recaudit inspect [--format text|md|csv|json] FILE\n"
               "\n"
               "Shows a .safetensors or .npy file (detected by content): the metadata\n"
               "(op first), then per tensor its dtype, shape, min, max, mean |x| and\n"
               "NaN and Inf counts.  csv writes the tensor table only.\n"
               "\n"
               "options:\n"
               "  --format F   text (default), md, csv or json\n"
               "  -h, --help   this help\n"
               "\n"
               "example:\n"
               "  recaudit inspect --format csv case.safetensors\n");
}

static const struct option inspect_options[] = {
    RA_CLI_OPTION_FORMAT,
    RA_CLI_OPTIONS_END,
};

static const ra_cli_syntax inspect_syntax = {.cmd = "inspect",
                                             .shortopts = ":h",
                                             .longopts = inspect_options,
                                             .help = print_help,
                                             .style = RA_CLI_HINT};

int ra_cmd_inspect(int argc, char **argv)
{
    ra_cli_args a;
    int rc = ra_cli_parse(&a, &inspect_syntax, argc, argv, NULL);
    if (rc != RA_CLI_GO)
        return rc;
    if (optind >= argc)
        return ra_cli_usage_error("inspect", "missing FILE");
    if (argc - optind > 1)
        return ra_cli_usage_error("inspect", "one FILE at a time ('%s' is extra)",
                                  argv[optind + 1]);
    const char *path = argv[optind];

    ra_tensors ts;
    ra_kv meta;
    ra_tensors_init(&ts);
    ra_kv_init(&meta);
    ra_status st;
    const char *kind;
    if (is_npy(path)) {
        char name[256];
        ra_tensor *t = NULL;
        kind = "npy";
        stem(name, sizeof name, path);
        st = ra_npy_read(&t, path, name);
        if (st == RA_OK)
            st = ra_tensors_add(&ts, t);
    } else {
        kind = "safetensors";
        st = ra_safetensors_read(&ts, &meta, path);
    }
    if (st == RA_OK)
        st = write_report(stdout, a.fmt, path, kind, &meta, &ts);
    ra_tensors_clear(&ts);
    ra_kv_clear(&meta);
    return ra_status_exit_code(st);
}
