/* Data directory lookup: $RECAUDIT_DATA, installed pkgdatadir, ./data, the built-in copy. */
#include <config.h>

#include "audit/datadir.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/io.h"

/*
 * RA_PKGDATADIR comes from the build (src/audit/local.mk) as the configured
 * $(pkgdatadir).  Existence is tested with stat(); whether the file is a
 * readable, well-formed table is for its parser to say, with the path.
 * The built-in copies are the files the program was built with, so a
 * binary copied alone to another machine (a GPU host without the data
 * directory) still has its gates and suites; `recaudit list suites` shows
 * which copy is in use.
 */

#ifndef RA_PKGDATADIR
#error "RA_PKGDATADIR must be defined by the build (src/audit/local.mk)"
#endif

extern const char ra_embedded_gates_tsv[];
extern const char ra_embedded_suite_quick_tsv[];
extern const char ra_embedded_suite_full_tsv[];

static const struct {
    const char *rel;
    const char *text;
} builtin[] = {
    {"gates.tsv", ra_embedded_gates_tsv},
    {"suites/quick.tsv", ra_embedded_suite_quick_tsv},
    {"suites/full.tsv", ra_embedded_suite_full_tsv},
};

#define NBUILTIN (sizeof builtin / sizeof builtin[0])

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static ra_status join(char *buf, size_t len, const char *dir, const char *rel)
{
    int n = snprintf(buf, len, "%s/%s", dir, rel);
    if (n < 0 || (size_t)n >= len)
        RA_ERRORF(RA_EINVAL, "data path '%s/%s' is too long", dir, rel);
    return RA_OK;
}

/* Steps 1-3: the path of rel, or RA_ENOTFOUND (reported only when
   RECAUDIT_DATA is set, since step 4 may still have it). */
static ra_status find_file(char *buf, size_t len, const char *rel, int *explicit_dir)
{
    const char *env = getenv("RECAUDIT_DATA");
    *explicit_dir = env && *env;
    if (*explicit_dir) {
        RA_TRY(join(buf, len, env, rel));
        if (!exists(buf))
            RA_ERRORF(RA_ENOTFOUND, "data file %s not found (RECAUDIT_DATA=%s)", buf, env);
        return RA_OK;
    }
    RA_TRY(join(buf, len, RA_PKGDATADIR, rel));
    if (exists(buf))
        return RA_OK;
    RA_TRY(join(buf, len, "data", rel));
    return exists(buf) ? RA_OK : RA_ENOTFOUND;
}

ra_status ra_data_find(char *buf, size_t len, const char *rel)
{
    int explicit_dir;
    ra_status st = find_file(buf, len, rel, &explicit_dir);
    if (st != RA_ENOTFOUND || explicit_dir)
        return st;
    RA_ERRORF(RA_ENOTFOUND,
              "data file '%s' not found in %s nor in ./data (set RECAUDIT_DATA to the "
              "directory holding gates.tsv and suites/)",
              rel, RA_PKGDATADIR);
}

ra_status ra_data_read(char **text, char *where, size_t wlen, const char *rel)
{
    *text = NULL;
    char path[4096];
    int explicit_dir;
    ra_status st = find_file(path, sizeof path, rel, &explicit_dir);
    if (st == RA_OK) {
        RA_TRY(ra_file_read_text(text, path));
        snprintf(where, wlen, "%s", path);
        return RA_OK;
    }
    if (st != RA_ENOTFOUND || explicit_dir)
        return st;
    for (size_t i = 0; i < NBUILTIN; i++)
        if (strcmp(builtin[i].rel, rel) == 0) {
            if (!(*text = strdup(builtin[i].text)))
                RA_ERROR("out of memory", RA_ENOMEM);
            snprintf(where, wlen, "built-in copy of data/%s", rel);
            return RA_OK;
        }
    RA_ERRORF(RA_ENOTFOUND,
              "data file '%s' not found in %s, in ./data nor among the built-in copies (set "
              "RECAUDIT_DATA to the directory holding gates.tsv and suites/)",
              rel, RA_PKGDATADIR);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends a copy of the first n bytes of name to *names. */
static ra_status add_name(char ***names, size_t *n, size_t *cap, const char *name, size_t len)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 8;
        char **nn = realloc(*names, c * sizeof *nn);
        if (!nn)
            RA_ERROR("out of memory", RA_ENOMEM);
        *names = nn;
        *cap = c;
    }
    if (!((*names)[*n] = strndup(name, len)))
        RA_ERROR("out of memory", RA_ENOMEM);
    (*n)++;
    return RA_OK;
}

static ra_status list_dir(char ***names, size_t *n, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        RA_ERRORF(RA_EIO, "%s: cannot list: %s", dir, strerror(errno));
    size_t cap = 0;
    ra_status st = RA_OK;
    for (struct dirent *e; st == RA_OK && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".tsv") == 0 && e->d_name[0] != '.')
            st = add_name(names, n, &cap, e->d_name, len - 4);
    }
    closedir(d);
    return st;
}

ra_status ra_data_suites(char ***names, size_t *n, char *dir, size_t dirlen)
{
    *names = NULL;
    *n = 0;
    int explicit_dir;
    ra_status st = find_file(dir, dirlen, "suites", &explicit_dir);
    if (st == RA_OK)
        st = list_dir(names, n, dir);
    else if (st == RA_ENOTFOUND && !explicit_dir) {
        snprintf(dir, dirlen, "%s", RA_DATA_BUILTIN);
        size_t cap = 0;
        st = RA_OK;
        for (size_t i = 0; st == RA_OK && i < NBUILTIN; i++)
            if (strncmp(builtin[i].rel, "suites/", 7) == 0)
                st = add_name(names, n, &cap, builtin[i].rel + 7, strlen(builtin[i].rel) - 11);
    }
    if (st != RA_OK) {
        for (size_t i = 0; i < *n; i++)
            free((*names)[i]);
        free(*names);
        *names = NULL;
        *n = 0;
        return st;
    }
    qsort(*names, *n, sizeof **names, cmp_str);
    return RA_OK;
}
