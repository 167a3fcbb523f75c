/* The operation table: the one list of operations, and the generic lookups over a row. */
#include <config.h>

#include "core/op.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tensor.h"

/*
 * Adding an operation adds its row here (defined in the operation's own
 * files) and nothing else in generic code; docs/develop.md has the recipe.
 * The order is the order of `recaudit list ops`.
 */

extern const ra_op ra_op_gdn;
extern const ra_op ra_op_scan_linear, ra_op_scan_affine, ra_op_scan_log;
extern const ra_op ra_op_glr;
extern const ra_op ra_op_bigdn, ra_op_bigdn_core;

static const ra_op *const ops[] = {
    &ra_op_gdn,
    &ra_op_scan_linear, &ra_op_scan_affine, &ra_op_scan_log,
    &ra_op_glr,
    &ra_op_bigdn, &ra_op_bigdn_core,
    NULL,
};

const ra_op *const *ra_ops(void) { return ops; }

const ra_op *ra_op_find(const char *name)
{
    for (const ra_op *const *o = ops; name && *o; o++)
        if (strcmp((*o)->name, name) == 0)
            return *o;
    return NULL;
}

ra_status ra_op_require(const ra_op **out, const char *name, const char *what)
{
    *out = ra_op_find(name);
    if (*out)
        return RA_OK;
    char names[256] = "";
    for (const ra_op *const *o = ops; *o; o++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                 o == ops ? "" : ", ", (*o)->name);
    RA_ERRORF(RA_ENOTFOUND, "%s '%s': unknown operation (known: %s)", what, name ? name : "",
              names);
}

int ra_op_flag_index(const ra_op *op, const char *name)
{
    for (int i = 0; op->flags && op->flags[i].name; i++)
        if (name && strcmp(op->flags[i].name, name) == 0)
            return i;
    return -1;
}

const ra_op_item *ra_op_regime(const ra_op *op, const char *name)
{
    for (const ra_op_item *r = op->regimes; name && r && r->name; r++)
        if (strcmp(r->name, name) == 0)
            return r;
    /* NAME:PARAM names regime NAME with a parameter, and NAME+NAME2 a
       composite (gdn's), which the op's spec_check accepts or refuses */
    const char *colon = name ? name + strcspn(name, ":+") : NULL;
    if (colon && !*colon)
        colon = NULL;
    for (const ra_op_item *r = op->regimes; colon && r && r->name; r++)
        if (strlen(r->name) == (size_t)(colon - name) && strncmp(r->name, name, colon - name) == 0)
            return r;
    return NULL;
}

const ra_op_tensor *ra_op_tensor_find(const ra_op *op, const char *name)
{
    for (const ra_op_tensor *t = op->tensors; name && t->name; t++)
        if (strcmp(t->name, name) == 0)
            return t;
    return NULL;
}

int ra_op_input_nondiff(const ra_op *op, const char *name)
{
    for (const char *const *p = op->nondiff; p && *p && name; p++)
        if (strcmp(*p, name) == 0)
            return 1;
    return 0;
}

size_t ra_op_tensor_names(const char **out, size_t n, const ra_op *op, ra_role role)
{
    size_t k = 0;
    for (const ra_op_tensor *t = op->tensors; t->name; t++)
        if (t->role == role && k + 1 < n)
            out[k++] = t->name;
    if (n)
        out[k] = NULL;
    return k;
}

unsigned ra_op_caps_known(const ra_op *op)
{
    unsigned known = RA_FWD | RA_BWD;
    for (const ra_op_cap *c = op ? op->caps : NULL; c && c->name; c++)
        known |= c->bit;
    return known;
}

static void append(char *buf, size_t len, size_t *used, const char *s)
{
    int w = snprintf(buf + *used, len > *used ? len - *used : 0, "%s%s", *used ? "," : "", s);
    if (w > 0)
        *used += (size_t)w;
}

void ra_op_caps_format(char *buf, size_t len, const ra_op *op, unsigned caps)
{
    size_t used = 0;
    if (len)
        buf[0] = '\0';
    if (caps & RA_FWD)
        append(buf, len, &used, "fwd");
    if (caps & RA_BWD)
        append(buf, len, &used, "bwd");
    for (const ra_op_cap *c = op ? op->caps : NULL; c && c->name; c++)
        if (caps & c->bit)
            append(buf, len, &used, c->name);
    unsigned unknown = caps & ~ra_op_caps_known(op);
    if (unknown) {
        char hex[16];
        snprintf(hex, sizeof hex, "0x%x", unknown);
        append(buf, len, &used, hex);
    }
}

/* --- case specs ------------------------------------------------------------------ */

static void copy_str(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src && *src ? src : "-");
}

void ra_case_spec_init(ra_case_spec *s)
{
    memset(s, 0, sizeof *s);
    strcpy(s->op, "-");
    strcpy(s->shape, "-");
    strcpy(s->regime, "-");
    strcpy(s->dtype, "-");
}

void ra_case_spec_from_case(ra_case_spec *s, const ra_case *c, int bwd)
{
    ra_case_spec_init(s);
    copy_str(s->op, sizeof s->op, c->op);
    const ra_op *op = ra_op_find(c->op);
    if (op)
        op->identify(s, c);
    else
        copy_str(s->shape, sizeof s->shape, ra_case_param(c, "shape"));
    copy_str(s->regime, sizeof s->regime, ra_case_param(c, "regime"));
    /* The input dtype is what the tensors are, whatever the metadata says:
       the first input of the layout that the case holds. */
    const ra_tensor *first = NULL;
    for (const ra_op_tensor *t = op ? op->tensors : NULL; t && t->name && !first; t++)
        if (t->role == RA_ROLE_INPUT)
            first = ra_tensors_find(&c->tensors, t->name);
    if (!first && c->tensors.n)
        first = c->tensors.items[0];
    copy_str(s->dtype, sizeof s->dtype,
             first ? ra_dtype_name(first->dtype) : ra_case_param(c, "dtype"));
    const char *seed = ra_case_param(c, "seed");
    char *end;
    if (seed && *seed && *seed != '-') {
        s->seed = strtoull(seed, &end, 10);
        s->has_seed = *end == '\0';
    }
    s->bwd = bwd;
}

ra_status ra_case_spec_set_flag(ra_case_spec *s, const ra_op *op, const char *name)
{
    int i = ra_op_flag_index(op, name);
    if (i < 0) {
        char names[160] = "";
        for (int k = 0; op->flags && op->flags[k].name; k++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "",
                     op->flags[k].name);
        RA_ERRORF(RA_EINVAL, "flag '%s' is not one of op %s's flags (%s)", name ? name : "",
                  op->name, *names ? names : "none");
    }
    s->flags |= 1u << i;
    return RA_OK;
}

/* 1 if name is one of op's params. */
static int is_param(const ra_op *op, const char *name, size_t n)
{
    for (const ra_op_item *p = op ? op->params : NULL; p && p->name; p++)
        if (strlen(p->name) == n && strncmp(p->name, name, n) == 0)
            return 1;
    return 0;
}

/* The entry of key in s->params ("key=value"), or NULL. */
static char *param_entry(const ra_case_spec *s, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = s->params; *p;) {
        size_t len = strcspn(p, ",");
        if (len > n && p[n] == '=' && strncmp(p, key, n) == 0)
            return (char *)p;
        p += len + (p[len] == ',');
    }
    return NULL;
}

const char *ra_case_spec_param(char *buf, size_t len, const ra_case_spec *s, const char *key)
{
    const char *e = param_entry(s, key);
    if (!e)
        return NULL;
    e += strlen(key) + 1;
    snprintf(buf, len, "%.*s", (int)strcspn(e, ","), e);
    return buf;
}

ra_status ra_case_spec_set_param(ra_case_spec *s, const ra_op *op, const char *kv)
{
    const char *eq = kv ? strchr(kv, '=') : NULL;
    if (!eq || eq == kv || !eq[1] || strpbrk(kv, ", \t\n"))
        RA_ERRORF(RA_EINVAL, "parameter '%s' is not KEY=VALUE (no ',' or blanks)", kv ? kv : "");
    if (!is_param(op, kv, (size_t)(eq - kv))) {
        char names[160] = "";
        for (int k = 0; op->params && op->params[k].name; k++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "",
                     op->params[k].name);
        RA_ERRORF(RA_EINVAL, "parameter '%.*s' is not one of op %s's parameters (%s)",
                  (int)(eq - kv), kv, op->name, *names ? names : "none");
    }
    char key[64], rest[RA_SPEC_PARAMS_MAX] = "";
    snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
    /* drop an earlier entry of key, keep the others in order */
    for (const char *p = s->params; *p;) {
        size_t n = strcspn(p, ",");
        if (!(n > strlen(key) && p[strlen(key)] == '=' && strncmp(p, key, strlen(key)) == 0))
            snprintf(rest + strlen(rest), sizeof rest - strlen(rest), "%s%.*s", *rest ? "," : "",
                     (int)n, p);
        p += n + (p[n] == ',');
    }
    if (snprintf(s->params, sizeof s->params, "%s%s%s", rest, *rest ? "," : "", kv) >=
        (int)sizeof s->params)
        RA_ERRORF(RA_EINVAL, "parameters '%s,%s' are too long (at most %d characters)", rest, kv,
                  RA_SPEC_PARAMS_MAX - 1);
    return RA_OK;
}

void ra_case_spec_flags_format(char *buf, size_t len, const ra_case_spec *s, const char *prefix)
{
    size_t used = 0;
    if (len)
        buf[0] = '\0';
    const ra_op *op = ra_op_find(s->op);
    for (int i = 0; op && op->flags && op->flags[i].name; i++) {
        if (!(s->flags & (1u << i)))
            continue;
        int w = snprintf(buf + used, len > used ? len - used : 0, "%s%s", prefix,
                         op->flags[i].name);
        if (w > 0)
            used += (size_t)w;
    }
    int opt = strcmp(prefix, " --") == 0;
    for (const char *p = s->params; *p;) {
        size_t n = strcspn(p, ",");
        int w = snprintf(buf + used, len > used ? len - used : 0, "%s%.*s",
                         opt ? " --param " : prefix, (int)n, p);
        if (w > 0)
            used += (size_t)w;
        p += n + (p[n] == ',');
    }
}

ra_status ra_case_spec_check(ra_case_spec *s, const char *what)
{
    const ra_op *op;
    RA_TRY(ra_op_require(&op, s->op, what ? what : "op"));
    char canon[RA_SPEC_SHAPE_MAX];
    RA_TRY(op->shape_canon(canon, sizeof canon, s->shape));
    memcpy(s->shape, canon, sizeof canon);
    if (!ra_op_regime(op, s->regime))
        RA_ERRORF(RA_EINVAL, "--regime '%s': no such regime of op %s (see 'recaudit list regimes')",
                  s->regime, op->name);
    ra_dtype dt;
    RA_TRY(ra_dtype_parse(&dt, s->dtype));
    unsigned all = 0;
    for (int i = 0; op->flags && op->flags[i].name; i++)
        all |= 1u << i;
    if (s->flags & ~all)
        RA_ERRORF(RA_EINVAL, "case flags 0x%x: op %s defines no such flag", s->flags & ~all,
                  op->name);
    /* each parameter again: its key is the op's, its value well formed */
    char kv[RA_SPEC_PARAMS_MAX];
    for (const char *p = s->params; *p;) {
        size_t n = strcspn(p, ",");
        snprintf(kv, sizeof kv, "%.*s", (int)n, p);
        ra_case_spec probe = *s;
        RA_TRY(ra_case_spec_set_param(&probe, op, kv));
        p += n + (p[n] == ',');
    }
    return op->spec_check ? op->spec_check(s) : RA_OK;
}

ra_status ra_case_spec_generate(ra_case *c, const ra_case_spec *s)
{
    const ra_op *op;
    RA_TRY(ra_op_require(&op, s->op, "op"));
    RA_TRY(op->generate(c, s));
    char kv[RA_SPEC_PARAMS_MAX];
    for (const char *p = s->params; *p;) {
        size_t n = strcspn(p, ",");
        snprintf(kv, sizeof kv, "%.*s", (int)n, p);
        char *eq = strchr(kv, '=');
        if (!eq)
            RA_ERRORF(RA_EINVAL, "parameter '%s' is not KEY=VALUE", kv);
        *eq = '\0';
        RA_TRY(ra_kv_set(&c->params, kv, eq + 1));
        p += n + (p[n] == ',');
    }
    return RA_OK;
}

void ra_case_drop_role(ra_case *c, const ra_op *op, ra_role role)
{
    for (const ra_op_tensor *t = op->tensors; t && t->name; t++)
        if (t->role == role)
            ra_tensor_free(ra_tensors_take(&c->tensors, t->name));
}
