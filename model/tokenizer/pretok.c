/*
 * tokenizer_pretok.c - pre-tokenizers: text piece -> words for the model.
 *
 * ByteLevel (GPT-2): optionally prefix a space, split with the GPT-2 pattern
 * (each match is a word; gpt2_match.c matches it without a regex engine, with
 * the classes HF's Oniguruma uses), then map every byte to its printable
 * stand-in code point (GPT-2 bytes_to_unicode).
 *
 * Metaspace (SentencePiece style): spaces become the replacement character
 * (U+2581), the replacement is prepended per prepend_scheme, and with split
 * the piece is cut before every replacement character (HF "MergedWithNext").
 *
 * A Sequence runs the stages in order; words move between two scratch
 * buffers, so nothing is allocated once they are large enough.
 */
#include "model/tokenizer/internal.h"

#include <pthread.h>
#include <string.h>

/* GPT-2 bytes_to_unicode: printable Latin-1 bytes stand for themselves, the
 * other 68 map to U+0100.. in byte order. The UTF-8 of each stand-in, built once. */
typedef struct byte_chars {
    char utf8[256][2];
    uint8_t len[256];
} byte_chars;

static byte_chars bytemap;
static pthread_once_t bytemap_once = PTHREAD_ONCE_INIT;

static void bytemap_init(void)
{
    for (int b = 0; b < 256; b++) {
        uint32_t cp;
        if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)
            cp = (uint32_t)b;
        else if (b <= 32)
            cp = 256 + (uint32_t)b;
        else if (b <= 160)
            cp = 256 + 33 + (uint32_t)(b - 127);
        else
            cp = 256 + 67; /* 173 */
        char u[4];
        bytemap.len[b] = (uint8_t)tok_utf8_encode(cp, u);
        memcpy(bytemap.utf8[b], u, 2); /* every stand-in is below U+0800 */
    }
}

size_t tok_bytelevel_map(const char *word, size_t len, char *o)
{
    char *const o0 = o;
    for (size_t i = 0; i < len; i++) {
        uint8_t b = (uint8_t)word[i];
        o[0] = bytemap.utf8[b][0];
        o[1] = bytemap.utf8[b][1];
        o += bytemap.len[b];
    }
    return (size_t)(o - o0);
}

/* Appends text[0..len) byte-mapped as one word. */
static int push_bytelevel_word(tok_buf *ob, tok_spans *os, const char *p, size_t len, bool at_start)
{
    if (tok_buf_reserve(ob, ob->n + len * 2) != 0)
        return -1;
    size_t off = ob->n;
    ob->n += tok_bytelevel_map(p, len, ob->p + off);
    return tok_spans_push(os, off, ob->n - off, at_start);
}

int tok_bytelevel_input(const tok_pre *pre, tok_scratch *s, const char *text, size_t len, const char **p,
                        size_t *n)
{
    *p = text;
    *n = len;
    if (pthread_once(&bytemap_once, bytemap_init) != 0)
        return -1;
    if (pre->add_prefix_space && (len == 0 || text[0] != ' ')) {
        /* HF prepends a space to the piece; it takes part in the split */
        tok_buf *tmp = &s->prefixed;
        if (tok_buf_reserve(tmp, len + 1) != 0)
            return -1;
        tmp->p[0] = ' ';
        memcpy(tmp->p + 1, text, len);
        *p = tmp->p;
        *n = len + 1;
    }
    return 0;
}

static int bytelevel(const tok_pre *pre, tok_scratch *s, const char *text, size_t len,
                     bool at_start, tok_buf *ob, tok_spans *os)
{
    const char *p;
    size_t n;
    if (tok_bytelevel_input(pre, s, text, len, &p, &n) != 0)
        return -1;
    if (!pre->use_regex)
        return push_bytelevel_word(ob, os, p, n, at_start);
    for (size_t pos = 0, end; pos < n; pos = end) {
        end = tok_gpt2_match(p, n, pos);
        if (push_bytelevel_word(ob, os, p + pos, end - pos, at_start && pos == 0) != 0)
            return -1;
    }
    return 0;
}

bool tok_metaspace_prepends(const tok_pre *pre, const char *text, size_t len, bool at_start)
{
    const size_t rl = pre->replacement_len;
    const bool starts_with_rep = (len > 0 && text[0] == ' ') ||
                                 (len >= rl && memcmp(text, pre->replacement, rl) == 0);
    return !starts_with_rep && (pre->prepend == TOK_PREPEND_ALWAYS ||
                                (pre->prepend == TOK_PREPEND_FIRST && at_start));
}

tok_words tok_pre_words(const tokenizer *t)
{
    if (t->n_pres != 1)
        return TOK_WORDS_STAGES;
    const tok_pre *pre = &t->pres[0];
    if (pre->kind == TOK_PRE_BYTELEVEL && pre->use_regex)
        return TOK_WORDS_GPT2;
    if (pre->kind == TOK_PRE_METASPACE && pre->split && pre->replacement_len > 0)
        return TOK_WORDS_METASPACE;
    return TOK_WORDS_STAGES;
}

static int metaspace(const tok_pre *pre, const char *text, size_t len, bool at_start, tok_buf *ob,
                     tok_spans *os)
{
    const char *rep = pre->replacement;
    size_t rl = pre->replacement_len;
    if (tok_buf_reserve(ob, ob->n + (len + 1) * rl + len) != 0)
        return -1;
    size_t off = ob->n;
    const bool prepend = tok_metaspace_prepends(pre, text, len, at_start);
    char *o = ob->p + ob->n;
    if (prepend) {
        memcpy(o, rep, rl);
        o += rl;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(o, rep, rl);
            o += rl;
        } else {
            *o++ = text[i];
        }
    }
    size_t end = (size_t)(o - ob->p);
    ob->n = end;
    if (!pre->split)
        return off < end ? tok_spans_push(os, off, end - off, at_start) : 0;
    /* cut before every replacement character; the text before the first one
     * (if any) is a word of its own */
    size_t word = off;
    for (size_t i = off; i + rl <= end;) {
        if (ob->p[i] == rep[0] && memcmp(ob->p + i, rep, rl) == 0) {
            if (i > word && tok_spans_push(os, word, i - word, at_start && word == off) != 0)
                return -1;
            word = i;
            i += rl;
        } else {
            i++;
        }
    }
    if (end > word && tok_spans_push(os, word, end - word, at_start && word == off) != 0)
        return -1;
    return 0;
}

int tok_pretokenize(const tokenizer *t, tok_scratch *s, const char *text, size_t len,
                    bool at_start, int *which)
{
    int cur = 0;
    s->pre[0].n = 0;
    s->spans[0].n = 0;
    if (t->n_pres == 0) {
        if (tok_buf_reserve(&s->pre[0], len) != 0)
            return -1;
        memcpy(s->pre[0].p, text, len);
        s->pre[0].n = len;
        *which = 0;
        return len ? tok_spans_push(&s->spans[0], 0, len, at_start) : 0;
    }
    for (size_t k = 0; k < t->n_pres; k++) {
        const tok_pre *pre = &t->pres[k];
        tok_buf *ob = &s->pre[cur];
        tok_spans *os = &s->spans[cur];
        ob->n = 0;
        os->n = 0;
        /* the input: the original text for the first stage, else the previous words */
        size_t n_in = k == 0 ? 1 : s->spans[cur ^ 1].n;
        for (size_t w = 0; w < n_in; w++) {
            const char *p;
            size_t plen;
            bool st;
            if (k == 0) {
                p = text;
                plen = len;
                st = at_start;
            } else {
                const tok_span *sp = &s->spans[cur ^ 1].v[w];
                p = s->pre[cur ^ 1].p + sp->off;
                plen = sp->len;
                st = sp->at_start;
            }
            if (plen == 0)
                continue;
            int rc = pre->kind == TOK_PRE_BYTELEVEL
                         ? bytelevel(pre, s, p, plen, st, ob, os)
                         : metaspace(pre, p, plen, st, ob, os);
            if (rc != 0)
                return -1;
        }
        cur ^= 1;
    }
    *which = cur ^ 1;
    return 0;
}
