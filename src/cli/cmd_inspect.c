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

/* Metadata entries in display order (indices into meta): "op" first,
   then file order.  Indices, not keys, so that showing n entries costs
   O(n), not n lookups. */
static void ordered_keys(size_t *order, const ra_kv *meta)
{
    size_t k = 0;
    for (size_t i = 0; i < meta->n; i++)
        if (strcmp(meta->keys[i], "op") == 0)
            order[k++] = i;
    for (size_t i = 0; i < meta->n; i++)
        if (strcmp(meta->keys[i], "op") != 0)
            order[k++] = i;
}

/* Metadata text for a terminal: C0 controls, DEL and the C1 controls
   (U+0080..U+009F, which some terminals obey as escape sequences) are
   shown as \xHH / \uHHHH, and a backslash as \\, so a file cannot move
   the cursor, retitle the window or hide text, and the output is unambiguous. */
static void put_visible(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\\')
            fputs("\\\\", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
            fprintf(f, "\\u%04x", *++p);
        else
            fputc(*p, f);
    }
}

static ra_status write_json(FILE *f, const char *path, const char *kind, const ra_kv *meta,
                            const size_t *order, const ra_table *t)
{
    json_t *head = json_object();
    json_t *m = json_object();
    int bad = !head || !m;
    for (size_t i = 0; !bad && i < meta->n; i++)
        bad = json_object_set_new(m, meta->keys[order[i]], json_string(meta->vals[order[i]])) != 0;
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
    size_t *order = calloc(meta->n + 1, sizeof *order);
    if (!order)
        RA_ERROR("inspect: out of memory", RA_ENOMEM);
    ordered_keys(order, meta);
    ra_status st = tensor_table(&t, ts);
    if (st == RA_OK) {
        switch (fmt) {
        case RA_FMT_JSON:
            st = write_json(f, path, kind, meta, order, t);
            break;
        case RA_FMT_CSV:
            st = ra_table_write(t, f, fmt);
            break;
        case RA_FMT_MARKDOWN:
            fprintf(f, "**%s** (%s, %zu tensor%s)\n\n", path, kind, ts->n, ts->n == 1 ? "" : "s");
            for (size_t i = 0; i < meta->n; i++) {
                fputs("- ", f);
                put_visible(f, meta->keys[order[i]]);
                fputs(": `", f);
                put_visible(f, meta->vals[order[i]]);
                fputs("`\n", f);
            }
            fputs(meta->n ? "\n" : "", f);
            st = ra_table_write(t, f, fmt);
            break;
        default:
            fprintf(f, "%s: %s, %zu tensor%s\n", path, kind, ts->n, ts->n == 1 ? "" : "s");
            for (size_t i = 0; i < meta->n; i++) {
                put_visible(f, meta->keys[order[i]]);
                fputs(": ", f);
                put_visible(f, meta->vals[order[i]]);
                fputc('\n', f);
            }
            fputc('\n', f);
            st = ra_table_write(t, f, fmt);
        }
    }
    ra_table_free(t);
    free(order);
    return st;
}

/* 1 when the file starts with the .npy magic, 0 when not, -1 (reported)
   when it cannot be opened or is not a regular file. */
static int is_npy(const char *path)
{
    unsigned char magic[6];
    FILE *f;
    uint64_t size;
    if (ra_file_open_regular(&f, &size, path) != RA_OK)
        return -1;
    size_t n = size >= sizeof magic ? fread(magic, 1, sizeof magic, f) : 0;
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
    int npy = is_npy(path);
    if (npy < 0) {
        kind = "";
        st = RA_EIO;
    } else if (npy) {
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
