/*
 * question.c - question validation, as the official package does it (see
 * question.h); the rendering of a valid question is in render.c.
 *
 * The rules, in the package's order (first failure wins):
 *   id non-empty after strip; definition an object; type one of
 *   choice/score/noul; instructions present, not null, not blank, not an
 *   empty list/object (non-strings are rendered as JSON); then per type:
 *   choice criteria an object (label -> description) or a non-empty list of
 *   scalar, non-null, pairwise distinct labels (Python equality: 1, 1.0 and
 *   true are one key); score criteria a non-empty list without nulls; noul
 *   criteria absent/null or an object keyed only true/false (any case);
 *   option_order a permutation of the option indices; labels only on noul,
 *   exactly false/true mapping to distinct non-blank strings.
 * Python's str.strip() strips Unicode whitespace, so blank-ness here does too.
 * A question that passes is rendered into its normalized form by render.c.
 */
#include "model/laya/question.h"
#include "model/laya/question_internal.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend/rows.h"

/* Room for an error message's parts: the message is cut to layad_error.msg (768 bytes) and
 * a repr inside it to a 600-byte tail, so what lies past 1024 bytes can never show. Fixed
 * buffers keep validation failures off the allocator. */
#define MSG_BYTES 1024

const char *const question_type_names[3] = {"choice", "score", "noul"};

/* ---- small Python helpers ---------------------------------------------------- */

/* Decodes the code point at s[i] (valid UTF-8 assumed), storing its length. */
static uint32_t cp_at(const unsigned char *s, size_t n, size_t i, int *len)
{
    uint32_t c = s[i];
    int l = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (i + (size_t)l > n)
        l = 1;
    uint32_t cp = l == 1 ? c : l == 2 ? c & 0x1F : l == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < l; k++)
        cp = (cp << 6) | (s[i + k] & 0x3F);
    *len = l;
    return cp;
}

static int py_isspace(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* str.strip(): the [*b, *e) range of s without leading/trailing Unicode whitespace. */
static void py_strip(const char *str, size_t n, size_t *b, size_t *e)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        int l;
        uint32_t c = cp_at(s, n, i, &l);
        if (!py_isspace(c))
            break;
        i += (size_t)l;
    }
    size_t j = n;
    while (j > i) {
        size_t k = j - 1;
        while (k > i && (s[k] & 0xC0) == 0x80)
            k--;
        int l;
        uint32_t c = cp_at(s, n, k, &l);
        if (!py_isspace(c))
            break;
        j = k;
    }
    *b = i;
    *e = j;
}

static int is_blank(const char *s, size_t n)
{
    size_t b, e;
    py_strip(s, n, &b, &e);
    return b == e;
}

void py_repr_str(pj_buf *b, const char *s, size_t n)
{
    int has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    pj_buf_put(b, &q, 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == (unsigned char)q || c == '\\')
            pj_buf_printf(b, "\\%c", c);
        else if (c == '\n')
            pj_buf_puts(b, "\\n");
        else if (c == '\r')
            pj_buf_puts(b, "\\r");
        else if (c == '\t')
            pj_buf_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7F)
            pj_buf_printf(b, "\\x%02x", c);
        else
            pj_buf_put(b, (const char *)&c, 1);
    }
    pj_buf_put(b, &q, 1);
}

/* repr() of a scalar JSON value as Python prints it inside a message. */
static void py_repr_value(pj_buf *b, const pj_value *v)
{
    if (v->type == PJ_STRING)
        py_repr_str(b, v->u.str.s, v->u.str.len);
    else if (v->type == PJ_ARRAY || v->type == PJ_OBJECT)
        pj_dump(b, v); /* Python would print a repr; close enough for a message */
    else
        pj_str(b, v);
}

static const char *py_type_name(const pj_value *v)
{
    switch (v->type) {
    case PJ_NULL: return "NoneType";
    case PJ_TRUE:
    case PJ_FALSE: return "bool";
    case PJ_INT: return "int";
    case PJ_FLOAT: return "float";
    case PJ_STRING: return "str";
    case PJ_ARRAY: return "list";
    default: return "dict";
    }
}

/* Fails with status 422, field "questions.<qid>[.part]" and message "question <repr(qid)>: ...". */
static int qfail(layad_error *err, const char *qid, size_t qid_len, const char *part, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int qfail(layad_error *err, const char *qid, size_t qid_len, const char *part, const char *fmt, ...)
{
    char mem[MSG_BYTES];
    pj_buf m = pj_buf_fixed(mem, sizeof mem);
    pj_buf_puts(&m, "question ");
    py_repr_str(&m, qid, qid_len);
    pj_buf_puts(&m, ": ");
    char tail[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tail, sizeof tail, fmt, ap);
    va_end(ap);
    pj_buf_puts(&m, tail);
    char field[256];
    snprintf(field, sizeof field, "questions.%.*s%s%s", (int)(qid_len > 200 ? 200 : qid_len), qid,
             part ? "." : "", part ? part : "");
    return layad_fail_field(err, 422, field, "%s", m.p);
}

/* ---- limits -------------------------------------------------------------------- */

int question_check_limits(const pj_value *questions, int max_questions, int max_options,
                          int max_levels, layad_error *err)
{
    if (questions->type != PJ_OBJECT)
        return 0;
    if (questions->u.obj.n > (size_t)max_questions)
        return layad_fail_field(err, 413, "questions", "too many questions (%zu > %d)",
                                questions->u.obj.n, max_questions);
    for (size_t i = 0; i < questions->u.obj.n; i++) {
        const pj_member *m = &questions->u.obj.m[i];
        const pj_value *type = pj_get(m->val, "type"), *crit = pj_get(m->val, "criteria");
        if (!type || type->type != PJ_STRING || !crit)
            continue;
        size_t count = crit->type == PJ_ARRAY ? crit->u.arr.n : crit->type == PJ_OBJECT ? crit->u.obj.n : 0;
        char field[256];
        snprintf(field, sizeof field, "questions.%.*s.criteria", (int)(m->keylen > 200 ? 200 : m->keylen), m->key);
        if (!strcmp(type->u.str.s, "choice") && (crit->type == PJ_ARRAY || crit->type == PJ_OBJECT) &&
            count > (size_t)max_options)
            return layad_fail_field(err, 413, field, "too many choice options for '%.*s' (%zu > %d)",
                                    (int)(m->keylen > 200 ? 200 : m->keylen), m->key, count, max_options);
        if (!strcmp(type->u.str.s, "score") && crit->type == PJ_ARRAY && count > (size_t)max_levels)
            return layad_fail_field(err, 413, field, "too many score levels for '%.*s' (%zu > %d)",
                                    (int)(m->keylen > 200 ? 200 : m->keylen), m->key, count, max_levels);
    }
    return 0;
}

/* ---- validation ------------------------------------------------------------------ */

static int is_scalar_label(const pj_value *v)
{
    return v->type == PJ_STRING || v->type == PJ_INT || v->type == PJ_FLOAT || v->type == PJ_TRUE ||
           v->type == PJ_FALSE;
}

int question_ascii_lower_eq(const char *s, size_t n, const char *word)
{
    if (n != strlen(word))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != word[i])
            return 0;
    }
    return 1;
}

static int option_count(int qtype, const pj_value *crit)
{
    if (qtype == QTYPE_NOUL)
        return 2;
    if (crit && crit->type == PJ_ARRAY)
        return (int)crit->u.arr.n;
    if (crit && crit->type == PJ_OBJECT)
        return (int)crit->u.obj.n;
    return 0;
}

static int check_choice(const char *qid, size_t ql, const pj_value *crit, layad_error *err)
{
    if (!crit || (crit->type != PJ_OBJECT && crit->type != PJ_ARRAY))
        return qfail(err, qid, ql, "criteria", "a choice question takes 'criteria' as a dict of label -> "
                                               "description, or a list of labels");
    size_t n = crit->type == PJ_ARRAY ? crit->u.arr.n : crit->u.obj.n;
    if (!n)
        return qfail(err, qid, ql, "criteria", "a choice question needs at least one criterion");
    if (crit->type == PJ_OBJECT)
        return 0; /* keys are strings: scalar, non-null, distinct by construction */
    for (size_t i = 0; i < n; i++) {
        const pj_value *label = crit->u.arr.items[i];
        if (label->type == PJ_NULL)
            return qfail(err, qid, ql, "criteria",
                         "choice label %zu is null; a label is rendered as option text and used as the "
                         "answer key, so it must be a string, number or bool -- a null label renders as "
                         "the text \"None\" while its answer key is \"null\"", i);
        if (!is_scalar_label(label)) {
            char mem[MSG_BYTES];
            pj_buf r = pj_buf_fixed(mem, sizeof mem);
            py_repr_value(&r, label);
            return qfail(err, qid, ql, "criteria",
                         "choice label %zu is a %s; a label is rendered as option text and used as the "
                         "answer key, so it must be a scalar (a string, number or bool), got %s",
                         i, py_type_name(label), r.p);
        }
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (pj_scalar_equal(crit->u.arr.items[i], crit->u.arr.items[j])) {
                char mem[MSG_BYTES];
                pj_buf r = pj_buf_fixed(mem, sizeof mem);
                py_repr_value(&r, crit->u.arr.items[i]);
                return qfail(err, qid, ql, "criteria",
                             "choice label %zu (%s) repeats label %zu; the labels are the answer keys, so "
                             "every option needs its own (1, 1.0 and True are one key)",
                             i, r.p, j);
            }
    return 0;
}

static int check_score(const char *qid, size_t ql, const pj_value *crit, layad_error *err)
{
    if (!crit || crit->type != PJ_ARRAY)
        return qfail(err, qid, ql, "criteria", "a score question takes 'criteria' as a list of level "
                                               "descriptions, index 0 first");
    if (!crit->u.arr.n)
        return qfail(err, qid, ql, "criteria", "a score question needs at least one level");
    for (size_t i = 0; i < crit->u.arr.n; i++)
        if (crit->u.arr.items[i]->type == PJ_NULL)
            return qfail(err, qid, ql, "criteria",
                         "score level %zu is null; give every level a description, index 0 first", i);
    return 0;
}

/* Appends sorted(set(k.lower() for k in crit)) as Python prints a list of strings. */
static int repr_lowered_keys(arena *a, pj_buf *keys, const pj_value *crit, layad_error *err)
{
    size_t n = crit->u.obj.n;
    char **lowered = arena_alloc(a, (n ? n : 1) * sizeof *lowered);
    if (!lowered)
        return layad_fail(err, 500, "out of memory");
    size_t nu = 0;
    for (size_t i = 0; i < n; i++) {
        const pj_member *m = &crit->u.obj.m[i];
        char *l = arena_alloc(a, m->keylen + 1);
        if (!l)
            return layad_fail(err, 500, "out of memory");
        for (size_t k = 0; k < m->keylen; k++)
            l[k] = (m->key[k] >= 'A' && m->key[k] <= 'Z') ? (char)(m->key[k] - 'A' + 'a') : m->key[k];
        l[m->keylen] = 0;
        size_t k;
        for (k = 0; k < nu; k++)
            if (!strcmp(lowered[k], l))
                break;
        if (k < nu)
            continue;
        lowered[nu++] = l;
    }
    for (size_t i = 1; i < nu; i++) /* insertion sort by code units (UTF-8 byte order = code point order) */
        for (size_t k = i; k > 0 && strcmp(lowered[k - 1], lowered[k]) > 0; k--) {
            char *t = lowered[k];
            lowered[k] = lowered[k - 1];
            lowered[k - 1] = t;
        }
    pj_buf_puts(keys, "[");
    for (size_t i = 0; i < nu; i++) {
        if (i)
            pj_buf_puts(keys, ", ");
        py_repr_str(keys, lowered[i], strlen(lowered[i]));
    }
    pj_buf_puts(keys, "]");
    return 0;
}

static int check_noul(arena *a, const char *qid, size_t ql, const pj_value *crit, layad_error *err)
{
    if (!crit || crit->type == PJ_NULL)
        return 0;
    if (crit->type != PJ_OBJECT)
        return qfail(err, qid, ql, "criteria", "a noul question takes 'criteria' as a dict with optional "
                                               "'true'/'false' descriptions, or omits it");
    int bad = 0;
    for (size_t i = 0; i < crit->u.obj.n; i++) {
        const pj_member *m = &crit->u.obj.m[i];
        if (!question_ascii_lower_eq(m->key, m->keylen, "true") &&
            !question_ascii_lower_eq(m->key, m->keylen, "false"))
            bad = 1;
    }
    if (!bad)
        return 0;
    char mem[MSG_BYTES];
    pj_buf keys = pj_buf_fixed(mem, sizeof mem);
    if (repr_lowered_keys(a, &keys, crit, err))
        return -1;
    return qfail(err, qid, ql, "criteria",
                 "a noul question takes 'criteria' keyed only 'true'/'false' (either or both, and omitted "
                 "is fine), got %s. Those keys are the option texts the model reads; any other key was "
                 "silently dropped and replaced with the defaults. If you want the answer worded "
                 "differently, keep 'criteria' keyed 'true'/'false' and set 'labels' instead.",
                 keys.p);
}

/* Resolves noul labels (NULL or JSON null: defaults). Fills the stripped labels. */
static int noul_labels(const pj_value *labels, const char **fl, size_t *fn, const char **tl, size_t *tn)
{
    if (!labels || labels->type == PJ_NULL) {
        *fl = "false";
        *fn = 5;
        *tl = "true";
        *tn = 4;
        return 0;
    }
    if (labels->type != PJ_OBJECT || labels->u.obj.n != 2)
        return -1;
    const pj_value *f = pj_get(labels, "false"), *t = pj_get(labels, "true");
    if (!f || !t || f->type != PJ_STRING || t->type != PJ_STRING)
        return -1;
    size_t fb, fe, tb, te;
    py_strip(f->u.str.s, f->u.str.len, &fb, &fe);
    py_strip(t->u.str.s, t->u.str.len, &tb, &te);
    if (fb == fe || tb == te || (fe - fb == te - tb && !memcmp(f->u.str.s + fb, t->u.str.s + tb, fe - fb)))
        return -1;
    *fl = f->u.str.s + fb;
    *fn = fe - fb;
    *tl = t->u.str.s + tb;
    *tn = te - tb;
    return 0;
}

/* The question id: non-empty after str.strip(). */
static int check_id(const char *qid, size_t ql, layad_error *err)
{
    if (!is_blank(qid, ql))
        return 0;
    char mem[MSG_BYTES];
    pj_buf r = pj_buf_fixed(mem, sizeof mem);
    py_repr_str(&r, qid, ql);
    int rc = layad_fail_field(err, 422, "questions", "question id must be a non-empty string, got %s",
                              r.p);
    return rc;
}

/* 'type': one of question_type_names; sets *qtype. */
static int parse_type(const char *qid, size_t ql, const pj_value *type, int *qtype, layad_error *err)
{
    *qtype = -1;
    for (int t = 0; t < 3; t++)
        if (type && type->type == PJ_STRING && type->u.str.len == strlen(question_type_names[t]) &&
            !memcmp(type->u.str.s, question_type_names[t], type->u.str.len))
            *qtype = t;
    if (*qtype >= 0)
        return 0;
    char mem[MSG_BYTES];
    pj_buf r = pj_buf_fixed(mem, sizeof mem);
    if (type)
        py_repr_value(&r, type);
    else
        pj_buf_puts(&r, "None");
    return qfail(err, qid, ql, "type", "unknown type %s; use one of ['choice', 'noul', 'score']",
                 r.p);
}

/* 'instructions': present, not null, not blank, not an empty list/object. */
static int check_instructions(const char *qid, size_t ql, const pj_value *ins, layad_error *err)
{
    if (!ins)
        return qfail(err, qid, ql, "instructions", "no 'instructions'; add the text the model should answer");
    if (ins->type == PJ_NULL)
        return qfail(err, qid, ql, "instructions",
                     "'instructions' must not be None; add the text the model should answer");
    if ((ins->type == PJ_STRING && is_blank(ins->u.str.s, ins->u.str.len)) ||
        (ins->type == PJ_ARRAY && !ins->u.arr.n) || (ins->type == PJ_OBJECT && !ins->u.obj.n))
        return qfail(err, qid, ql, "instructions",
                     "'instructions' must not be empty; add the text the model should answer");
    return 0;
}

/* 'criteria', by type. */
static int check_criteria(arena *a, const char *qid, size_t ql, int qtype, const pj_value *crit,
                          layad_error *err)
{
    return qtype == QTYPE_CHOICE  ? check_choice(qid, ql, crit, err)
           : qtype == QTYPE_SCORE ? check_score(qid, ql, crit, err)
                                  : check_noul(a, qid, ql, crit, err);
}

/* 'option_order' (absent is fine): sorted(int entries, bools excluded) must
 * equal range(n): every entry an int, each index once. */
static int check_option_order(arena *a, const char *qid, size_t ql, const pj_value *order, int n,
                              layad_error *err)
{
    if (!order)
        return 0;
    int ok = order->type == PJ_ARRAY && order->u.arr.n == (size_t)n;
    unsigned char *seen = ok ? arena_alloc(a, (size_t)n + 1) : NULL;
    if (ok && !seen)
        return layad_fail(err, 500, "out of memory");
    for (int s = 0; ok && s < n; s++) {
        const pj_value *v = order->u.arr.items[s];
        long idx = -1;
        if (v->type == PJ_INT && v->u.str.len <= 4)
            idx = strtol(v->u.str.s, NULL, 10);
        if (idx < 0 || idx >= n || seen[idx])
            ok = 0;
        else
            seen[idx] = 1;
    }
    if (ok)
        return 0;
    char mem[MSG_BYTES];
    pj_buf r = pj_buf_fixed(mem, sizeof mem);
    pj_dump(&r, order);
    return qfail(err, qid, ql, "option_order",
                   "'option_order' must be a permutation of range(%d) -- one slot per option, each "
                   "option once -- got %s", n, r.p);
}

/* 'labels': only on noul questions, and valid there; fills *words for noul. */
static int check_labels(const char *qid, size_t ql, int qtype, const pj_value *labels, noul_words *words,
                        layad_error *err)
{
    memset(words, 0, sizeof *words);
    if (labels && qtype != QTYPE_NOUL)
        return qfail(err, qid, ql, "labels", "'labels' is only supported for noul questions");
    if (qtype == QTYPE_NOUL && noul_labels(labels, &words->w[0], &words->n[0], &words->w[1], &words->n[1]))
        return qfail(err, qid, ql, "labels",
                     "noul labels must map exactly 'false' and 'true' to distinct non-empty strings");
    return 0;
}

/* The checks run in the package's order; the first failure wins. */
int question_parse(arena *a, const char *qid, size_t ql, const pj_value *def, laya_question *q,
                   layad_error *err)
{
    memset(q, 0, sizeof *q);
    if (check_id(qid, ql, err))
        return -1;
    if (def->type != PJ_OBJECT)
        return qfail(err, qid, ql, NULL, "definition must be a dict, got %s", py_type_name(def));
    int qtype;
    if (parse_type(qid, ql, pj_get(def, "type"), &qtype, err))
        return -1;
    const pj_value *ins = pj_get(def, "instructions");
    if (check_instructions(qid, ql, ins, err))
        return -1;
    const pj_value *crit = pj_get(def, "criteria");
    if (check_criteria(a, qid, ql, qtype, crit, err))
        return -1;
    int n = option_count(qtype, crit);
    const pj_value *order = pj_get(def, "option_order");
    if (check_option_order(a, qid, ql, order, n, err))
        return -1;
    noul_words words;
    if (check_labels(qid, ql, qtype, pj_get(def, "labels"), &words, err))
        return -1;

    q->qid = qid;
    q->qid_len = ql;
    q->qtype = qtype;
    q->n_opts = n;
    return question_normalize(a, q, ins, crit, order, &words, err);
}
