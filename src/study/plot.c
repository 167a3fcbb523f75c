/* SVG plots of points tables through gnuplot, run as a subprocess; least-squares fits (GSL). */

/*
 * The plot is data plus a script in a private temporary directory
 * (mkdtemp under $TMPDIR): the data file holds one block per (panel,
 * series, column), blocks separated by two blank lines so the script
 * addresses them with `index`; gnuplot is executed directly (fork/exec,
 * no shell) with the script as its argument.  Every string that enters the
 * script is single-quoted with inner quotes doubled (gnuplot's rule), and
 * text is `noenhanced`, so names with '_' or '^' print as they are.
 * gnuplot is optional: when it is not found the caller gets made = 0 and a
 * reason for the report, never an error; a gnuplot that runs and fails is
 * an error with the first line of its stderr.
 */

#include "study/study.h"
#include "core/io.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gsl/gsl_fit.h>

/* --- finding gnuplot ------------------------------------------------------------------- */

static int find_program(char *out, size_t len, const char *name)
{
    if (strchr(name, '/')) {
        if (access(name, X_OK) != 0)
            return 0;
        snprintf(out, len, "%s", name);
        return 1;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        if (n > 0 && (int)snprintf(out, len, "%.*s/%s", (int)n, path, name) < (int)len &&
            access(out, X_OK) == 0)
            return 1;
        path += n;
        if (*path == ':')
            path++;
    }
    return 0;
}

/* --- the script ------------------------------------------------------------------------ */

static void put_quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
    fputc('\'', f);
}

/* Distinct keys in order of first appearance. */
typedef struct keys {
    size_t n;
    char **v;
} keys;

static void keys_clear(keys *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->v[i]);
    free(k->v);
    k->n = 0;
    k->v = NULL;
}

static long keys_find(const keys *k, const char *s)
{
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(k->v[i], s) == 0)
            return (long)i;
    return -1;
}

static ra_status keys_add(keys *k, const char *s)
{
    if (keys_find(k, s) >= 0)
        return RA_OK;
    char **v = realloc(k->v, (k->n + 1) * sizeof *v);
    if (!v)
        RA_ERROR("plot: out of memory", RA_ENOMEM);
    k->v = v;
    size_t n = strlen(s) + 1;
    if (!(k->v[k->n] = malloc(n)))
        RA_ERROR("plot: out of memory", RA_ENOMEM);
    memcpy(k->v[k->n++], s, n);
    return RA_OK;
}

/* The series key of a row: the series columns' texts joined by ", ". */
static void series_key(char *buf, size_t len, const ra_points *p, size_t row, const char *series)
{
    buf[0] = '\0';
    if (!series)
        return;
    size_t used = 0;
    const char *s = series;
    while (*s) {
        size_t n = strcspn(s, ",");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(n < 63 ? n : 63), s);
        const char *t = ra_points_text(p, row, ra_points_col(p, name));
        int w = snprintf(buf + used, len > used ? len - used : 0, "%s%s=%s", used ? ", " : "", name,
                         t ? t : "");
        if (w > 0)
            used += (size_t)w;
        s += n;
        if (*s == ',')
            s++;
    }
}

static int usable(double x, int logaxis) { return isfinite(x) && (!logaxis || x > 0); }

static ra_status check_spec(const ra_points *p, const ra_plot *s)
{
    if (ra_points_col(p, s->x) < 0)
        RA_ERRORF(RA_ENOTFOUND, "plot: no column '%s'", s->x ? s->x : "(null)");
    if (!s->y[0])
        RA_ERROR("plot: no y column", RA_EINVAL);
    for (int i = 0; i < RA_PLOT_MAX_Y && s->y[i]; i++)
        if (ra_points_col(p, s->y[i]) < 0)
            RA_ERRORF(RA_ENOTFOUND, "plot: no column '%s'", s->y[i]);
    for (int i = 0; i < RA_PLOT_MAX_Y && s->model[i]; i++)
        if (ra_points_col(p, s->model[i]) < 0)
            RA_ERRORF(RA_ENOTFOUND, "plot: no column '%s'", s->model[i]);
    if (s->panel && ra_points_col(p, s->panel) < 0)
        RA_ERRORF(RA_ENOTFOUND, "plot: no panel column '%s'", s->panel);
    if (s->xtic && ra_points_col(p, s->xtic) < 0)
        RA_ERRORF(RA_ENOTFOUND, "plot: no x tic column '%s'", s->xtic);
    return RA_OK;
}

/* Writes the data blocks and the plot commands; *nblocks counts blocks. */
static ra_status write_files(const ra_points *p, const ra_plot *s, const char *dat, const char *gp,
                             const char *svg)
{
    keys panels = {0}, series = {0};
    char key[512];
    ra_status st = RA_OK;
    int px = ra_points_col(p, s->panel), xc = ra_points_col(p, s->x),
        xt = ra_points_col(p, s->xtic);
    for (size_t r = 0; st == RA_OK && r < ra_points_nrows(p); r++) {
        st = keys_add(&panels, s->panel ? ra_points_text(p, r, px) : "");
        series_key(key, sizeof key, p, r, s->series);
        if (st == RA_OK)
            st = keys_add(&series, key);
    }
    FILE *fd = st == RA_OK ? fopen(dat, "w") : NULL;
    FILE *fg = fd ? fopen(gp, "w") : NULL;
    if (st == RA_OK && (!fd || !fg)) {
        RA_REPORTF(RA_EIO, "plot: cannot write the temporary files: %s", strerror(errno));
        st = RA_EIO;
    }
    if (st != RA_OK)
        goto out;
    size_t np = panels.n, cols = np <= 1 ? 1 : (np <= 4 ? 2 : 3), rows = (np + cols - 1) / cols;
    fprintf(fg, "set terminal svg size %zu,%zu dynamic noenhanced font 'sans,11'\n", cols * 560,
            rows * 420);
    fputs("set output ", fg);
    put_quoted(fg, svg);
    /* one panel: the key beside the plot; several: inside each panel */
    fputs(np > 1 ? "\nset key inside left top opaque font ',9'\nset grid\n"
                 : "\nset key outside bottom center horizontal maxrows 3 font ',9'\nset grid\n",
          fg);
    if (s->logx) /* a tic every factor 4, so long power-of-2 grids stay legible */
        fputs("set logscale x 2\nset xtics 4\n", fg);
    if (s->logy)
        fputs("set logscale y\nset format y '%.0e'\n", fg);
    if (s->xtic)
        fputs("set xtics rotate by -20\n", fg);
    if (s->xlabel)
        fputs("set xlabel ", fg), put_quoted(fg, s->xlabel), fputc('\n', fg);
    if (s->ylabel)
        fputs("set ylabel ", fg), put_quoted(fg, s->ylabel), fputc('\n', fg);
    if (np > 1) {
        fprintf(fg, "set multiplot layout %zu,%zu", rows, cols);
        if (s->title)
            fputs(" title ", fg), put_quoted(fg, s->title);
        fputc('\n', fg);
    }
    long block = 0;
    for (size_t ip = 0; ip < np; ip++) {
        if (np > 1)
            fputs("set title ", fg), put_quoted(fg, panels.v[ip]), fputc('\n', fg);
        else if (s->title)
            fputs("set title ", fg), put_quoted(fg, s->title), fputc('\n', fg);
        int first = 1;
        for (size_t is = 0; is < series.n; is++) {
            for (int kind = 0; kind < 2; kind++) {
                const char *const *ys = kind ? s->model : s->y;
                for (int iy = 0; iy < RA_PLOT_MAX_Y && ys[iy]; iy++) {
                    int yc = ra_points_col(p, ys[iy]);
                    size_t npts = 0;
                    for (size_t r = 0; r < ra_points_nrows(p); r++) {
                        double x, y;
                        if (s->panel && strcmp(ra_points_text(p, r, px), panels.v[ip]) != 0)
                            continue;
                        series_key(key, sizeof key, p, r, s->series);
                        if (strcmp(key, series.v[is]) != 0)
                            continue;
                        if (!ra_points_num(&x, p, r, xc) || !ra_points_num(&y, p, r, yc) ||
                            !usable(x, s->logx) || !usable(y, s->logy))
                            continue;
                        fprintf(fd, "%.17g %.17g", x, y);
                        if (s->xtic) { /* a quoted label: no '"' inside */
                            fputs(" \"", fd);
                            for (const char *c = ra_points_text(p, r, xt); *c; c++)
                                fputc(*c == '"' || *c == '\n' ? ' ' : *c, fd);
                            fputc('"', fd);
                        }
                        fputc('\n', fd);
                        npts++;
                    }
                    if (npts == 0)
                        continue;
                    fputs("\n\n", fd);
                    char title[600];
                    int multi_y = (ys[1] != NULL) || kind;
                    snprintf(title, sizeof title, "%s%s%s", series.v[is],
                             multi_y && series.v[is][0] ? " " : "", multi_y ? ys[iy] : "");
                    fputs(first ? "plot " : ", \\\n     ", fg);
                    first = 0;
                    put_quoted(fg, dat);
                    fprintf(fg, " index %ld using 1:2%s with %s lc %zu dt %d title ", block,
                            s->xtic ? ":xtic(3)" : "", kind ? "lines" : "linespoints", is + 1,
                            kind ? 2 : 1);
                    put_quoted(fg, title[0] ? title : ys[iy]);
                    block++;
                }
            }
        }
        if (first) /* an empty panel still takes its place */
            fputs("set label 1 'no finite points' at graph 0.3,0.5\nplot 0 notitle\n"
                  "unset label 1",
                  fg);
        fputc('\n', fg);
    }
    if (np > 1)
        fputs("unset multiplot\n", fg);
out:
    if (fd && fclose(fd) != 0 && st == RA_OK) {
        RA_REPORTF(RA_EIO, "plot: cannot write '%s'", dat);
        st = RA_EIO;
    }
    if (fg && fclose(fg) != 0 && st == RA_OK) {
        RA_REPORTF(RA_EIO, "plot: cannot write '%s'", gp);
        st = RA_EIO;
    }
    keys_clear(&panels);
    keys_clear(&series);
    return st;
}

static ra_status run_gnuplot(const char *prog, const char *gp, const char *errpath)
{
    pid_t pid = fork();
    if (pid < 0)
        RA_ERRORF(RA_EIO, "plot: fork: %s", strerror(errno));
    if (pid == 0) {
        int fe = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fn = open("/dev/null", O_RDWR);
        if (fn >= 0) {
            dup2(fn, 0);
            dup2(fn, 1);
        }
        if (fe >= 0)
            dup2(fe, 2);
        execl(prog, prog, gp, (char *)NULL);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            RA_ERRORF(RA_EIO, "plot: waitpid: %s", strerror(errno));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return RA_OK;
    char line[512] = "";
    FILE *f = fopen(errpath, "r");
    if (f) {
        while (fgets(line, sizeof line, f))
            if (strspn(line, " \t\n^") != strlen(line))
                break;
        fclose(f);
        line[strcspn(line, "\n")] = '\0';
    }
    RA_ERRORF(RA_EIO, "plot: %s failed (%s %d): %s", prog,
              WIFEXITED(status) ? "exit status" : "signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), line);
}

ra_status ra_points_plot(int *made, char *why, size_t why_len, const ra_points *p,
                         const ra_plot *spec, const char *svg_path, const char *gnuplot)
{
    *made = 0;
    if (why_len)
        why[0] = '\0';
    RA_TRY(check_spec(p, spec));
    if (!gnuplot)
        gnuplot = getenv("RECAUDIT_GNUPLOT");
    if (!gnuplot)
        gnuplot = "gnuplot";
    char prog[4096];
    if (!gnuplot[0] || strcmp(gnuplot, "none") == 0) {
        snprintf(why, why_len, "plotting disabled (RECAUDIT_GNUPLOT=%s)", gnuplot);
        return RA_OK;
    }
    if (!find_program(prog, sizeof prog, gnuplot)) {
        snprintf(why, why_len, "gnuplot not found ('%s'; Debian: gnuplot-nox)", gnuplot);
        return RA_OK;
    }
    char dir[4096];
    RA_TRY(ra_temp_template(dir, sizeof dir, "recaudit-plot"));
    if (!mkdtemp(dir))
        RA_ERRORF(RA_EIO, "plot: cannot make the temporary directory %s: %s", dir, strerror(errno));
    char dat[4200], gp[4200], err[4200];
    snprintf(dat, sizeof dat, "%s/data", dir);
    snprintf(gp, sizeof gp, "%s/plot.gp", dir);
    snprintf(err, sizeof err, "%s/stderr", dir);
    ra_status st = write_files(p, spec, dat, gp, svg_path);
    if (st == RA_OK)
        st = run_gnuplot(prog, gp, err);
    unlink(dat);
    unlink(gp);
    unlink(err);
    rmdir(dir);
    if (st == RA_OK)
        *made = 1;
    return st;
}

/* --- fits ------------------------------------------------------------------------------ */

ra_status ra_fit_linear(ra_fit *fit, const double *x, const double *y, size_t n)
{
    memset(fit, 0, sizeof *fit);
    if (n < 2)
        RA_ERRORF(RA_EINVAL, "linear fit: %zu point(s), need at least 2", n);
    int distinct = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i]))
            RA_ERRORF(RA_EINVAL, "linear fit: point %zu is not finite (%g, %g)", i, x[i], y[i]);
        if (x[i] != x[0])
            distinct = 1;
    }
    if (!distinct)
        RA_ERROR("linear fit: every x is the same", RA_EINVAL);
    double c0, c1, cov00, cov01, cov11, sumsq;
    gsl_fit_linear(x, 1, y, 1, n, &c0, &c1, &cov00, &cov01, &cov11, &sumsq);
    double my = 0, tss = 0;
    for (size_t i = 0; i < n; i++)
        my += y[i];
    my /= (double)n;
    for (size_t i = 0; i < n; i++)
        tss += (y[i] - my) * (y[i] - my);
    fit->slope = c1;
    fit->intercept = c0;
    fit->slope_se = n > 2 ? sqrt(cov11) : 0;
    fit->r2 = tss > 0 ? 1 - sumsq / tss : 1;
    fit->n = n;
    return RA_OK;
}
