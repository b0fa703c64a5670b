/*
 * tokenizer_load.c - tokenizer.json (jansson) -> struct tokenizer.
 *
 * Strict by design: every component type and every option key is checked
 * against what tokenizer*.c implements, and anything else (a normalizer we do
 * not have, a Replace with a regex pattern, BPE dropout, a truncation block,
 * an unknown option key, ...) fails the load with an error that names it.
 * A tokenizer that loads therefore encodes exactly like HF, or not at all.
 *
 * The added_tokens list is registered by load_added.c.
 */
#include "model/tokenizer/internal.h"
#include "model/tokenizer/load_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fails with "<name>: <message>"; status 500 (a bad model file is our fault, not the client's). */
#define FAIL(...) do { layad_fail(err, 500, __VA_ARGS__); goto fail; } while (0)

/* ---- helpers shared with load_added.c (contracts in load_internal.h) ---------- */

int tok_check_keys(const tokenizer *t, json_t *obj, const char *what, const char *const *allowed,
                   layad_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        bool ok = false;
        for (size_t i = 0; allowed[i]; i++)
            ok = ok || strcmp(key, allowed[i]) == 0;
        if (!ok)
            return layad_fail(err, 500, "%s: %s option \"%s\" is not supported", t->name, what, key);
    }
    return 0;
}

int tok_get_bool(const tokenizer *t, json_t *obj, const char *key, bool def, bool *out,
                 const char *what, layad_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v))
        return layad_fail(err, 500, "%s: %s.%s must be a boolean", t->name, what, key);
    *out = json_is_true(v);
    return 0;
}

char *tok_dup_mem(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

/* ---- normalizers ------------------------------------------------------------ */

/* Fills nm from a Unicode normalization form (NFC, NFD, NFKC or NFKD) with no options. */
static int norm_unicode(tokenizer *t, json_t *n, const char *type, tok_norm *nm, layad_error *err)
{
    static const char *const keys[] = { "type", NULL };
    if (tok_check_keys(t, n, type, keys, err) != 0)
        return -1;
    nm->kind = strcmp(type, "NFC") == 0    ? TOK_NORM_NFC
               : strcmp(type, "NFD") == 0  ? TOK_NORM_NFD
               : strcmp(type, "NFKC") == 0 ? TOK_NORM_NFKC
                                           : TOK_NORM_NFKD;
    /* the table of where NFC may cut text, built now rather than on a request */
    if (nm->kind == TOK_NORM_NFC && tok_nfc_quick_init() != 0)
        return layad_fail(err, 500, "tokenizer: NFC table: pthread_once failed");
    return 0;
}

/* Fills nm from a Replace with a non-empty literal String pattern; nm owns the copies it makes. */
static int norm_replace(tokenizer *t, json_t *n, tok_norm *nm, layad_error *err)
{
    static const char *const keys[] = { "type", "pattern", "content", NULL };
    if (tok_check_keys(t, n, "normalizer Replace", keys, err) != 0)
        return -1;
    json_t *pat = json_object_get(n, "pattern");
    json_t *content = json_object_get(n, "content");
    json_t *str = json_is_object(pat) ? json_object_get(pat, "String") : NULL;
    if (json_is_object(pat) && json_object_get(pat, "Regex"))
        return layad_fail(err, 500, "%s: normalizer Replace with a Regex pattern is not supported",
                          t->name);
    if (!json_is_string(str) || json_object_size(pat) != 1 || !json_is_string(content))
        return layad_fail(err, 500, "%s: normalizer Replace needs pattern.String and content",
                          t->name);
    if (json_string_length(str) == 0)
        return layad_fail(err, 500, "%s: normalizer Replace with an empty pattern is not supported",
                          t->name);
    nm->kind = TOK_NORM_REPLACE;
    nm->pattern_len = json_string_length(str);
    nm->pattern = tok_dup_mem(json_string_value(str), nm->pattern_len);
    nm->content_len = json_string_length(content);
    nm->content = tok_dup_mem(json_string_value(content), nm->content_len);
    if (!nm->pattern || !nm->content) {
        free(nm->pattern);
        free(nm->content);
        return layad_fail(err, 500, "%s: out of memory", t->name);
    }
    return 0;
}

/* Fills nm from a Prepend; nm owns the copy of the prepend string. */
static int norm_prepend(tokenizer *t, json_t *n, tok_norm *nm, layad_error *err)
{
    static const char *const keys[] = { "type", "prepend", NULL };
    if (tok_check_keys(t, n, "normalizer Prepend", keys, err) != 0)
        return -1;
    json_t *content = json_object_get(n, "prepend");
    if (!json_is_string(content))
        return layad_fail(err, 500, "%s: normalizer Prepend needs a prepend string", t->name);
    nm->kind = TOK_NORM_PREPEND;
    nm->content_len = json_string_length(content);
    nm->content = tok_dup_mem(json_string_value(content), nm->content_len);
    if (!nm->content)
        return layad_fail(err, 500, "%s: out of memory", t->name);
    return 0;
}

/* Appends the normalizer n (a Sequence: each of its members, in order, at most 8 deep) to
 * t->norms; on failure nothing of the failing leaf is kept. */
static int add_norm(tokenizer *t, json_t *n, layad_error *err, int depth)
{
    if (!json_is_object(n))
        return layad_fail(err, 500, "%s: normalizer must be an object", t->name);
    const char *type = json_string_value(json_object_get(n, "type"));
    if (!type)
        return layad_fail(err, 500, "%s: normalizer without a type", t->name);
    if (strcmp(type, "Sequence") == 0) {
        static const char *const keys[] = { "type", "normalizers", NULL };
        if (tok_check_keys(t, n, "normalizer Sequence", keys, err) != 0)
            return -1;
        json_t *list = json_object_get(n, "normalizers");
        if (!json_is_array(list) || depth > 8)
            return layad_fail(err, 500, "%s: normalizer Sequence needs a normalizers list", t->name);
        size_t i;
        json_t *c;
        json_array_foreach(list, i, c) if (add_norm(t, c, err, depth + 1) != 0) return -1;
        return 0;
    }
    tok_norm nm = { 0 };
    int rc;
    if (strcmp(type, "NFC") == 0 || strcmp(type, "NFD") == 0 || strcmp(type, "NFKC") == 0 ||
        strcmp(type, "NFKD") == 0)
        rc = norm_unicode(t, n, type, &nm, err);
    else if (strcmp(type, "Replace") == 0)
        rc = norm_replace(t, n, &nm, err);
    else if (strcmp(type, "Prepend") == 0)
        rc = norm_prepend(t, n, &nm, err);
    else
        return layad_fail(err, 500, "%s: normalizer type \"%s\" is not supported", t->name, type);
    if (rc != 0)
        return -1;
    tok_norm *v = realloc(t->norms, (t->n_norms + 1) * sizeof *v);
    if (!v) {
        free(nm.pattern);
        free(nm.content);
        return layad_fail(err, 500, "%s: out of memory", t->name);
    }
    t->norms = v;
    t->norms[t->n_norms++] = nm;
    return 0;
}

/* ---- pre-tokenizers --------------------------------------------------------- */

/* Fills pre from a ByteLevel; compiles the GPT-2 split regexes into t on first use. */
static int pre_bytelevel(tokenizer *t, json_t *p, tok_pre *pre, layad_error *err)
{
    static const char *const keys[] = { "type", "add_prefix_space", "trim_offsets", "use_regex",
                                        NULL };
    bool trim;
    if (tok_check_keys(t, p, "pre_tokenizer ByteLevel", keys, err) != 0 ||
        tok_get_bool(t, p, "add_prefix_space", true, &pre->add_prefix_space, "ByteLevel", err) != 0 ||
        tok_get_bool(t, p, "trim_offsets", true, &trim, "ByteLevel", err) != 0 ||
        tok_get_bool(t, p, "use_regex", true, &pre->use_regex, "ByteLevel", err) != 0)
        return -1;
    pre->kind = TOK_PRE_BYTELEVEL;
    return 0;
}

/* Sets pre->prepend from Metaspace's prepend_scheme (default "always") and checks that
 * add_prefix_space, when given, agrees with it. */
static int metaspace_prepend(tokenizer *t, json_t *p, tok_pre *pre, layad_error *err)
{
    json_t *scheme = json_object_get(p, "prepend_scheme");
    json_t *aps = json_object_get(p, "add_prefix_space");
    pre->prepend = TOK_PREPEND_ALWAYS;
    if (scheme && !json_is_null(scheme)) {
        const char *s = json_string_value(scheme);
        if (s && strcmp(s, "always") == 0)
            pre->prepend = TOK_PREPEND_ALWAYS;
        else if (s && strcmp(s, "first") == 0)
            pre->prepend = TOK_PREPEND_FIRST;
        else if (s && strcmp(s, "never") == 0)
            pre->prepend = TOK_PREPEND_NEVER;
        else
            return layad_fail(err, 500, "%s: Metaspace prepend_scheme \"%s\" is not supported",
                              t->name, s ? s : "?");
    }
    if (aps && !json_is_null(aps)) {
        if (!json_is_boolean(aps))
            return layad_fail(err, 500, "%s: Metaspace.add_prefix_space must be a boolean", t->name);
        /* HF: add_prefix_space=false demands prepend_scheme "never" (the default
         * scheme is "always", so leaving it out is the same contradiction) */
        if (json_is_false(aps)) {
            if (pre->prepend != TOK_PREPEND_NEVER)
                return layad_fail(err, 500,
                                  "%s: Metaspace add_prefix_space does not match prepend_scheme",
                                  t->name);
            pre->prepend = TOK_PREPEND_NEVER;
        }
    }
    return 0;
}

/* Fills pre from a Metaspace: split flag, a one-character replacement, the prepend scheme. */
static int pre_metaspace(tokenizer *t, json_t *p, tok_pre *pre, layad_error *err)
{
    static const char *const keys[] = { "type", "replacement", "prepend_scheme", "split",
                                        "add_prefix_space", "str_rep", NULL };
    if (tok_check_keys(t, p, "pre_tokenizer Metaspace", keys, err) != 0 ||
        tok_get_bool(t, p, "split", true, &pre->split, "Metaspace", err) != 0)
        return -1;
    pre->kind = TOK_PRE_METASPACE;
    json_t *rep = json_object_get(p, "replacement");
    size_t adv = 0;
    if (!json_is_string(rep) || json_string_length(rep) == 0 ||
        json_string_length(rep) > 4 ||
        (tok_utf8_decode(json_string_value(rep), &adv), adv != json_string_length(rep)))
        return layad_fail(err, 500, "%s: Metaspace replacement must be one character", t->name);
    pre->replacement_len = adv;
    memcpy(pre->replacement, json_string_value(rep), adv);
    return metaspace_prepend(t, p, pre, err);
}

/* Appends the pre-tokenizer p (a Sequence: each of its members, in order, at most 8 deep) to
 * t->pres. */
static int add_pre(tokenizer *t, json_t *p, layad_error *err, int depth)
{
    if (!json_is_object(p))
        return layad_fail(err, 500, "%s: pre_tokenizer must be an object", t->name);
    const char *type = json_string_value(json_object_get(p, "type"));
    if (!type)
        return layad_fail(err, 500, "%s: pre_tokenizer without a type", t->name);
    tok_pre pre = { 0 };
    if (strcmp(type, "Sequence") == 0) {
        static const char *const keys[] = { "type", "pretokenizers", NULL };
        if (tok_check_keys(t, p, "pre_tokenizer Sequence", keys, err) != 0)
            return -1;
        json_t *list = json_object_get(p, "pretokenizers");
        if (!json_is_array(list) || depth > 8)
            return layad_fail(err, 500, "%s: pre_tokenizer Sequence needs a pretokenizers list",
                              t->name);
        size_t i;
        json_t *c;
        json_array_foreach(list, i, c) if (add_pre(t, c, err, depth + 1) != 0) return -1;
        return 0;
    } else if (strcmp(type, "ByteLevel") == 0) {
        if (pre_bytelevel(t, p, &pre, err) != 0)
            return -1;
    } else if (strcmp(type, "Metaspace") == 0) {
        if (pre_metaspace(t, p, &pre, err) != 0)
            return -1;
    } else {
        return layad_fail(err, 500, "%s: pre_tokenizer type \"%s\" is not supported", t->name, type);
    }
    tok_pre *v = realloc(t->pres, (t->n_pres + 1) * sizeof *v);
    if (!v)
        return layad_fail(err, 500, "%s: out of memory", t->name);
    t->pres = v;
    t->pres[t->n_pres++] = pre;
    return 0;
}

/* ---- model ------------------------------------------------------------------ */

static int get_id(json_t *v, int32_t *id)
{
    if (!json_is_integer(v))
        return -1;
    json_int_t x = json_integer_value(v);
    if (x < 0 || x > INT32_MAX - 1)
        return -1;
    *id = (int32_t)x;
    return 0;
}

/* Splits merge entry e (number r + 1 in messages) into its two tokens a and b, which point into
 * e; *kind is the format of the first entry ("a b" string or ["a", "b"] pair), which every later
 * entry must share, as in HF. */
static int merge_pair(tokenizer *t, json_t *e, size_t r, int *kind, const char **a, size_t *al,
                      const char **b, size_t *bl, layad_error *err)
{
    int k = json_is_string(e) ? 1 : json_is_array(e) ? 2 : 0;
    if (k == 0 || (*kind && k != *kind))
        return layad_fail(err, 500, "%s: merge %zu has a bad format", t->name, r + 1);
    *kind = k;
    if (k == 1) {
        const char *s = json_string_value(e);
        size_t sl = json_string_length(e);
        const char *sp = memchr(s, ' ', sl);
        if (!sp || memchr(sp + 1, ' ', sl - (size_t)(sp + 1 - s)))
            return layad_fail(err, 500, "%s: merge %zu \"%s\" is not two tokens", t->name, r + 1, s);
        *a = s;
        *al = (size_t)(sp - s);
        *b = sp + 1;
        *bl = sl - *al - 1;
    } else {
        json_t *ja = json_array_get(e, 0), *jb = json_array_get(e, 1);
        if (json_array_size(e) != 2 || !json_is_string(ja) || !json_is_string(jb))
            return layad_fail(err, 500, "%s: merge %zu is not a pair of strings", t->name, r + 1);
        *a = json_string_value(ja);
        *al = json_string_length(ja);
        *b = json_string_value(jb);
        *bl = json_string_length(jb);
    }
    return 0;
}

/* Records merge entry e at rank r in t->bpe; both tokens and their concatenation must be in the
 * vocabulary. *joined (capacity *joined_cap) is the caller's buffer for the concatenation, grown
 * here; the caller frees it. */
static int load_merge(tokenizer *t, json_t *e, size_t r, int *kind, char **joined,
                      size_t *joined_cap, layad_error *err)
{
    tok_bpe *m = &t->bpe;
    const char *a = NULL, *b = NULL;
    size_t al = 0, bl = 0;
    if (merge_pair(t, e, r, kind, &a, &al, &b, &bl, err) != 0)
        return -1;
    int32_t ia = tok_strmap_get(&m->vocab, a, al);
    int32_t ib = tok_strmap_get(&m->vocab, b, bl);
    if (al + bl > *joined_cap) {
        size_t cap = (al + bl) * 2 + 64;
        char *j = realloc(*joined, cap);
        if (!j)
            return layad_fail(err, 500, "%s: out of memory", t->name);
        *joined = j;
        *joined_cap = cap;
    }
    memcpy(*joined, a, al);
    memcpy(*joined + al, b, bl);
    int32_t inew = tok_strmap_get(&m->vocab, *joined, al + bl);
    if (ia > TOK_MAX_ID || ib > TOK_MAX_ID || inew > TOK_MAX_ID)
        return layad_fail(err, 500, "%s: merge %zu uses an id above %d (not supported)", t->name,
                          r + 1, TOK_MAX_ID);
    if (ia < 0 || ib < 0 || inew < 0) {
        const char *missing = ia < 0 ? a : ib < 0 ? b : "(the merged token)";
        return layad_fail(err, 500, "%s: merge %zu uses a token out of the vocabulary: %.200s",
                          t->name, r + 1, missing);
    }
    tok_bpe_merge_put(m, ia, ib, (int32_t)r, inew);
    return 0;
}

/* Loads the merges list (NULL: none) into t->bpe, rank = position in the list. */
static int load_merges(tokenizer *t, json_t *merges, layad_error *err)
{
    size_t n = json_array_size(merges);
    if (n > TOK_MAX_MERGES)
        return layad_fail(err, 500, "%s: %zu merges (more than %d are not supported)", t->name, n,
                          TOK_MAX_MERGES);
    if (tok_bpe_merges_alloc(&t->bpe, n) != 0)
        return layad_fail(err, 500, "%s: out of memory", t->name);
    char *joined = NULL;
    size_t joined_cap = 0;
    int kind = 0; /* 1: "a b" strings, 2: ["a", "b"] pairs; HF accepts one or the other */
    int rc = 0;
    for (size_t r = 0; r < n && rc == 0; r++)
        rc = load_merge(t, json_array_get(merges, r), r, &kind, &joined, &joined_cap, err);
    free(joined);
    return rc;
}

static int load_model(tokenizer *t, json_t *model, layad_error *err)
{
    if (!json_is_object(model))
        return layad_fail(err, 500, "%s: model missing", t->name);
    const char *type = json_string_value(json_object_get(model, "type"));
    if (!type || strcmp(type, "BPE") != 0)
        return layad_fail(err, 500, "%s: model type \"%s\" is not supported", t->name,
                          type ? type : "(none)");
    static const char *const keys[] = { "type", "dropout", "unk_token", "continuing_subword_prefix",
                                        "end_of_word_suffix", "fuse_unk", "byte_fallback",
                                        "ignore_merges", "vocab", "merges", NULL };
    tok_bpe *m = &t->bpe;
    if (tok_check_keys(t, model, "model BPE", keys, err) != 0 ||
        tok_get_bool(t, model, "fuse_unk", false, &m->fuse_unk, "BPE", err) != 0 ||
        tok_get_bool(t, model, "byte_fallback", false, &m->byte_fallback, "BPE", err) != 0 ||
        tok_get_bool(t, model, "ignore_merges", false, &m->ignore_merges, "BPE", err) != 0)
        return -1;
    json_t *dropout = json_object_get(model, "dropout");
    if (dropout && !json_is_null(dropout))
        return layad_fail(err, 500, "%s: BPE dropout is not supported", t->name);
    const char *opt_str[] = { "continuing_subword_prefix", "end_of_word_suffix" };
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(model, opt_str[i]);
        if (v && !json_is_null(v) && !(json_is_string(v) && json_string_length(v) == 0))
            return layad_fail(err, 500, "%s: BPE %s is not supported", t->name, opt_str[i]);
    }
    json_t *vocab = json_object_get(model, "vocab");
    json_t *merges = json_object_get(model, "merges");
    if (!json_is_object(vocab))
        return layad_fail(err, 500, "%s: BPE vocab missing", t->name);
    if (merges && !json_is_array(merges) && !json_is_null(merges))
        return layad_fail(err, 500, "%s: BPE merges must be a list", t->name);
    if (tok_strmap_init(&m->vocab, json_object_size(vocab)) != 0)
        return layad_fail(err, 500, "%s: out of memory", t->name);
    void *it;
    for (it = json_object_iter(vocab); it; it = json_object_iter_next(vocab, it)) {
        const char *key = json_object_iter_key(it);
        size_t klen = json_object_iter_key_len(it);
        int32_t id;
        if (get_id(json_object_iter_value(it), &id) != 0)
            return layad_fail(err, 500, "%s: vocab entry \"%.200s\" has a bad id", t->name, key);
        if (tok_strmap_put(&m->vocab, key, klen, id) != 0)
            return layad_fail(err, 500, "%s: out of memory", t->name);
        if ((size_t)id + 1 > t->vocab_size)
            t->vocab_size = (size_t)id + 1;
    }
    json_t *unk = json_object_get(model, "unk_token");
    m->unk_id = -1;
    if (unk && !json_is_null(unk)) {
        if (!json_is_string(unk))
            return layad_fail(err, 500, "%s: BPE unk_token must be a string", t->name);
        m->unk_token = tok_dup_mem(json_string_value(unk), json_string_length(unk));
        if (!m->unk_token)
            return layad_fail(err, 500, "%s: out of memory", t->name);
        m->unk_id = tok_strmap_get(&m->vocab, json_string_value(unk), json_string_length(unk));
        m->unk_missing = m->unk_id < 0;
    }
    if (load_merges(t, merges, err) != 0)
        return -1;
    return tok_bpe_init_tables(m);
}

/* ---- entry points ----------------------------------------------------------- */

/* Tokenizers allocated and not yet freed: the threads' caches are sized by it (tok_live). */
static _Atomic size_t live;

size_t tok_live(void)
{
    return atomic_load_explicit(&live, memory_order_relaxed);
}

tokenizer *tokenizer_load_mem(const char *json, size_t len, const char *name, layad_error *err)
{
    tokenizer *t = calloc(1, sizeof *t);
    json_t *root = NULL;
    tok_scratch *s = NULL;
    if (!t) {
        layad_fail(err, 500, "tokenizer: out of memory");
        return NULL;
    }
    snprintf(t->name, sizeof t->name, "%s", name ? name : "tokenizer.json");
    static _Atomic uint64_t serials;
    t->serial = atomic_fetch_add(&serials, 1) + 1;
    atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
    json_error_t jerr;
    root = json_loadb(json, len, JSON_ALLOW_NUL, &jerr);
    if (!root)
        FAIL("%s: invalid JSON at line %d: %s", t->name, jerr.line, jerr.text);
    if (!json_is_object(root))
        FAIL("%s: not a JSON object", t->name);
    static const char *const keys[] = { "version", "truncation", "padding", "added_tokens",
                                        "normalizer", "pre_tokenizer", "post_processor",
                                        "decoder", "model", NULL };
    if (tok_check_keys(t, root, "tokenizer", keys, err) != 0)
        goto fail;
    const char *blocks[] = { "truncation", "padding" };
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(root, blocks[i]);
        if (v && !json_is_null(v))
            FAIL("%s: %s is not supported (encode must return every id)", t->name, blocks[i]);
    }
    json_t *norm = json_object_get(root, "normalizer");
    if (norm && !json_is_null(norm) && add_norm(t, norm, err, 0) != 0)
        goto fail;
    json_t *pre = json_object_get(root, "pre_tokenizer");
    if (pre && !json_is_null(pre) && add_pre(t, pre, err, 0) != 0)
        goto fail;
    t->words = tok_pre_words(t);
    if (load_model(t, json_object_get(root, "model"), err) != 0)
        goto fail;
    json_t *added = json_object_get(root, "added_tokens");
    if (added && !json_is_array(added) && !json_is_null(added))
        FAIL("%s: added_tokens must be a list", t->name);
    if (tok_load_added(t, json_is_array(added) ? added : NULL, err) != 0)
        goto fail;
    s = calloc(1, sizeof *s);
    if (!s || tok_trie_build(&t->trie_raw, t->added, t->n_added, false, t, s) != 0 ||
        tok_trie_build(&t->trie_norm, t->added, t->n_added, true, t, s) != 0)
        FAIL("%s: out of memory building the added-token matcher", t->name);
    tok_scratch_free(s);
    json_decref(root);
    return t;
fail:
    tok_scratch_free(s);
    json_decref(root);
    tokenizer_free(t);
    return NULL;
}

tokenizer *tokenizer_load(const char *path, layad_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        layad_fail(err, 500, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        layad_fail(err, 500, "%s: cannot determine the size", path);
        return NULL;
    }
    buf = malloc((size_t)size + 1);
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        free(buf);
        fclose(f);
        layad_fail(err, 500, "%s: read failed", path);
        return NULL;
    }
    fclose(f);
    tokenizer *t = tokenizer_load_mem(buf, (size_t)size, path, err);
    free(buf);
    return t;
}

void tokenizer_free(tokenizer *t)
{
    if (!t)
        return;
    atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
    for (size_t i = 0; i < t->n_norms; i++) {
        free(t->norms[i].pattern);
        free(t->norms[i].content);
    }
    free(t->norms);
    free(t->pres);
    for (size_t i = 0; i < t->n_added; i++)
        free(t->added[i].content);
    free(t->added);
    tok_strmap_free(&t->added_map);
    tok_trie_free(&t->trie_raw);
    tok_trie_free(&t->trie_norm);
    tok_bpe_free(&t->bpe);
    free(t);
}
