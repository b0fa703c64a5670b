/*
 * load_added.c - tokenizer.json's added_tokens list -> t->added_map, t->added.
 *
 * Added tokens are registered the way HF's deserializer does it (one
 * AddedVocabulary::add_tokens call over the list): the id of a token is the
 * one its content already has (earlier added token, then model vocabulary),
 * else the next free id, whatever "id" the file states; specials are listed
 * once; the matching flags of an id are those of its last definition.
 */
#include "model/tokenizer/internal.h"
#include "model/tokenizer/load_internal.h"

#include <stdlib.h>
#include <string.h>

/* One entry of the file's list; its content points into the JSON document. */
typedef struct raw_added {
    const char *content;
    size_t len;          /* 0: empty, or ignored as an identical repeat */
    bool special, normalized, lstrip, rstrip, single_word;
    int32_t id;
} raw_added;

/* The registration of one list, owned by tok_load_added. */
typedef struct added_reg {
    raw_added *raw;        /* the file's entries */
    raw_added *reg;        /* registered: last definition per id */
    size_t n, n_reg;
    tok_strmap reg_of_id;  /* id (4 bytes) -> index into reg */
    tok_strmap specials;   /* contents of special entries */
} added_reg;

static bool same_token(const raw_added *a, const raw_added *b)
{
    return a->len == b->len && memcmp(a->content, b->content, a->len) == 0 &&
           a->special == b->special && a->normalized == b->normalized && a->lstrip == b->lstrip &&
           a->rstrip == b->rstrip && a->single_word == b->single_word;
}

/* Reads the list's entries into g->raw (options checked, HF defaults) and the contents of the
 * special ones into g->specials. */
static int read_entries(tokenizer *t, json_t *list, added_reg *g, layad_error *err)
{
    static const char *const keys[] = { "id", "content", "single_word", "lstrip", "rstrip",
                                        "normalized", "special", NULL };
    for (size_t i = 0; i < g->n; i++) {
        json_t *e = json_array_get(list, i);
        json_t *c = json_object_get(e, "content");
        if (!json_is_object(e) || !json_is_string(c))
            return layad_fail(err, 500, "%s: added token %zu has no content", t->name, i);
        raw_added *r = &g->raw[i];
        r->content = json_string_value(c);
        r->len = json_string_length(c);
        if (tok_check_keys(t, e, "added token", keys, err) != 0 ||
            tok_get_bool(t, e, "special", false, &r->special, "added token", err) != 0 ||
            tok_get_bool(t, e, "normalized", !r->special, &r->normalized, "added token", err) != 0 ||
            tok_get_bool(t, e, "lstrip", false, &r->lstrip, "added token", err) != 0 ||
            tok_get_bool(t, e, "rstrip", false, &r->rstrip, "added token", err) != 0 ||
            tok_get_bool(t, e, "single_word", false, &r->single_word, "added token", err) != 0)
            return -1;
        if (r->special && r->len > 0 && tok_strmap_put(&g->specials, r->content, r->len, 1) != 0)
            return layad_fail(err, 500, "%s: out of memory", t->name);
    }
    return 0;
}

/* The id HF gives a content that neither an added token nor the model has yet: the model size,
 * or one past the highest added id once that reaches it (max_added -1: none so far). */
static int32_t next_free_id(size_t model_size, int32_t max_added)
{
    if (max_added < 0)
        return (int32_t)model_size;
    if ((size_t)max_added >= model_size || model_size == 0)
        return max_added + 1;
    return (int32_t)model_size;
}

/* Records r (whose id is set) as the last definition of its id. */
static int register_def(tokenizer *t, added_reg *g, const raw_added *r, layad_error *err)
{
    int32_t k = tok_strmap_get(&g->reg_of_id, (const char *)&r->id, sizeof r->id);
    if (k < 0) {
        k = (int32_t)g->n_reg++;
        if (tok_strmap_put(&g->reg_of_id, (const char *)&r->id, sizeof r->id, k) != 0)
            return layad_fail(err, 500, "%s: out of memory", t->name);
    }
    g->reg[k] = *r;
    return 0;
}

/* Gives every non-empty entry its id, as AddedVocabulary::add_tokens assigns them, into
 * t->added_map and g->reg; an entry identical to the registered definition of its id is
 * ignored (its len set to 0), like HF. */
static int assign_ids(tokenizer *t, added_reg *g, layad_error *err)
{
    size_t model_size = t->bpe.vocab.n;
    int32_t max_added = -1;
    for (size_t i = 0; i < g->n; i++) {
        raw_added *r = &g->raw[i];
        if (r->len == 0)
            continue;
        int32_t id = tok_strmap_get(&t->added_map, r->content, r->len);
        if (id >= 0) {
            int32_t k = tok_strmap_get(&g->reg_of_id, (const char *)&id, sizeof id);
            if (k >= 0 && same_token(&g->reg[k], r)) {
                r->len = 0; /* an identical token is ignored, like HF */
                continue;
            }
        }
        if (id < 0)
            id = tok_strmap_get(&t->bpe.vocab, r->content, r->len);
        if (id < 0)
            id = next_free_id(model_size, max_added);
        if (tok_strmap_put(&t->added_map, r->content, r->len, id) != 0)
            return layad_fail(err, 500, "%s: out of memory", t->name);
        if (id > max_added)
            max_added = id;
        r->id = id;
        if (register_def(t, g, r, err) != 0)
            return -1;
        if ((size_t)id + 1 > t->vocab_size)
            t->vocab_size = (size_t)id + 1;
    }
    return 0;
}

/* Appends r to t->added: the id its content maps to, the matching flags of that id's last
 * definition. -1 when out of memory. */
static int append_added(tokenizer *t, const added_reg *g, const raw_added *r)
{
    tok_added *a = &t->added[t->n_added];
    a->content = tok_dup_mem(r->content, r->len);
    if (!a->content)
        return -1;
    a->len = r->len;
    a->normalized = r->normalized;
    a->id = tok_strmap_get(&t->added_map, r->content, r->len);
    int32_t k = tok_strmap_get(&g->reg_of_id, (const char *)&a->id, sizeof a->id);
    const raw_added *def = k >= 0 ? &g->reg[k] : r;
    a->special = def->special;
    a->lstrip = def->lstrip;
    a->rstrip = def->rstrip;
    a->single_word = def->single_word;
    t->n_added++;
    return 0;
}

/* Builds the matching list t->added: specials once each (first definition), then the others. */
static int build_list(tokenizer *t, const added_reg *g, layad_error *err)
{
    size_t n = g->n;
    t->added = calloc(n ? n : 1, sizeof *t->added);
    tok_strmap listed = { 0 };
    int rc = -1;
    if (!t->added || tok_strmap_init(&listed, n) != 0)
        goto oom;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            const raw_added *r = &g->raw[i];
            if (r->len == 0)
                continue;
            if (pass == 0) {
                if (!r->special || tok_strmap_get(&listed, r->content, r->len) >= 0)
                    continue;
                if (tok_strmap_put(&listed, r->content, r->len, 1) != 0)
                    goto oom;
            } else if (tok_strmap_get(&g->specials, r->content, r->len) >= 0) {
                continue;
            }
            if (append_added(t, g, r) != 0)
                goto oom;
        }
    }
    rc = 0;
    goto out;
oom:
    layad_fail(err, 500, "%s: out of memory", t->name);
out:
    tok_strmap_free(&listed);
    return rc;
}

int tok_load_added(tokenizer *t, json_t *list, layad_error *err)
{
    size_t n = json_array_size(list);
    added_reg g = { .n = n };
    int rc = -1;
    g.raw = calloc(n ? n : 1, sizeof *g.raw);
    g.reg = calloc(n ? n : 1, sizeof *g.reg);
    if (!g.raw || !g.reg || tok_strmap_init(&t->added_map, n) != 0 ||
        tok_strmap_init(&g.reg_of_id, n) != 0 || tok_strmap_init(&g.specials, n) != 0) {
        layad_fail(err, 500, "%s: out of memory", t->name);
        goto out;
    }
    if (read_entries(t, list, &g, err) == 0 && assign_ids(t, &g, err) == 0 &&
        build_list(t, &g, err) == 0)
        rc = 0;
out:
    free(g.raw);
    free(g.reg);
    tok_strmap_free(&g.reg_of_id);
    tok_strmap_free(&g.specials);
    return rc;
}
