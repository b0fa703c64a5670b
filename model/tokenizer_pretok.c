/*
 * tokenizer_pretok.c - pre-tokenizers: text piece -> words for the model.
 *
 * ByteLevel (GPT-2): optionally prefix a space, split with the GPT-2 regex
 * (each match is a word, text between matches too: HF's "Isolated"), then map
 * every byte to its printable stand-in code point (GPT-2 bytes_to_unicode).
 * The regex runs in PCRE2 with UTF and UCP, JIT-compiled when available. HF
 * runs it in Oniguruma, whose \s is the Unicode White_Space property; PCRE2's
 * \s with UCP also matches U+180E, so the pattern spells the White_Space set
 * out instead of using \s.
 *
 * Metaspace (SentencePiece style): spaces become the replacement character
 * (U+2581), the replacement is prepended per prepend_scheme, and with split
 * the piece is cut before every replacement character (HF "MergedWithNext").
 *
 * A Sequence runs the stages in order; words move between two scratch
 * buffers, so nothing is allocated once they are large enough.
 */
#include "model/tokenizer_internal.h"

#include <string.h>

#define WS "\\t\\n\\x0B\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}" \
           "\\x{202F}\\x{205F}\\x{3000}"

static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+"
    "|[" WS "]+(?![^" WS "])|[" WS "]+";

pcre2_code *tok_gpt2_regex(layad_error *err)
{
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)GPT2_PATTERN, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        layad_fail(err, 500, "tokenizer: GPT-2 regex does not compile at %zu: %s", (size_t)eo,
                   (const char *)msg);
        return NULL;
    }
    /* JIT is an optimization; the interpreter gives the same matches without it */
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    return re;
}

/* GPT-2 bytes_to_unicode: printable Latin-1 bytes stand for themselves, the
 * other 68 map to U+0100.. in byte order. Writes the UTF-8, returns its length. */
static size_t byte_char(uint8_t b, char *out)
{
    uint32_t cp;
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)
        cp = b;
    else if (b <= 32)
        cp = 256 + b;
    else if (b <= 160)
        cp = 256 + 33 + (b - 127);
    else
        cp = 256 + 67; /* 173 */
    return tok_utf8_encode(cp, out);
}

/* Appends text[0..len) byte-mapped as one word. */
static int push_bytelevel_word(tok_buf *ob, tok_spans *os, const char *p, size_t len, bool at_start)
{
    if (tok_buf_reserve(ob, ob->n + len * 2) != 0)
        return -1;
    size_t off = ob->n;
    for (size_t i = 0; i < len; i++)
        ob->n += byte_char((uint8_t)p[i], ob->p + ob->n);
    return tok_spans_push(os, off, ob->n - off, at_start);
}

static int bytelevel(const tokenizer *t, const tok_pre *pre, tok_scratch *s, const char *text,
                     size_t len, bool at_start, tok_buf *ob, tok_spans *os)
{
    const char *p = text;
    size_t n = len;
    if (pre->add_prefix_space && (len == 0 || text[0] != ' ')) {
        if (!pre->use_regex) {
            if (tok_buf_reserve(ob, ob->n + 2 * len + 2) != 0)
                return -1;
            size_t off = ob->n;
            ob->n += byte_char(' ', ob->p + ob->n);
            for (size_t i = 0; i < len; i++)
                ob->n += byte_char((uint8_t)text[i], ob->p + ob->n);
            return tok_spans_push(os, off, ob->n - off, at_start);
        }
        /* with the regex, the space must take part in matching: use a prefixed copy */
        tok_buf *tmp = &s->prefixed;
        if (tok_buf_reserve(tmp, len + 1) != 0)
            return -1;
        tmp->p[0] = ' ';
        memcpy(tmp->p + 1, text, len);
        tmp->n = len + 1;
        p = tmp->p;
        n = len + 1;
    }
    if (!pre->use_regex)
        return push_bytelevel_word(ob, os, p, n, at_start);
    size_t pos = 0;
    while (pos < n) {
        int rc = pcre2_match(t->gpt2_re, (PCRE2_SPTR)p, n, pos, PCRE2_NO_UTF_CHECK, s->md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH)
            break;
        if (rc < 0)
            return -1;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(s->md);
        size_t ms = ov[0], me = ov[1];
        if (ms > pos && push_bytelevel_word(ob, os, p + pos, ms - pos, at_start && pos == 0) != 0)
            return -1;
        if (me > ms && push_bytelevel_word(ob, os, p + ms, me - ms, at_start && ms == 0) != 0)
            return -1;
        if (me == ms) {
            size_t adv;
            tok_utf8_decode(p + me, &adv);
            pos = me + adv;
            continue;
        }
        pos = me;
    }
    if (pos < n && push_bytelevel_word(ob, os, p + pos, n - pos, at_start && pos == 0) != 0)
        return -1;
    return 0;
}

static int metaspace(const tok_pre *pre, const char *text, size_t len, bool at_start, tok_buf *ob,
                     tok_spans *os)
{
    const char *rep = pre->replacement;
    size_t rl = pre->replacement_len;
    if (tok_buf_reserve(ob, ob->n + (len + 1) * rl + len) != 0)
        return -1;
    size_t off = ob->n;
    bool starts_with_rep = (len > 0 && text[0] == ' ') ||
                           (len >= rl && memcmp(text, rep, rl) == 0);
    bool prepend = !starts_with_rep && (pre->prepend == TOK_PREPEND_ALWAYS ||
                                        (pre->prepend == TOK_PREPEND_FIRST && at_start));
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
        if (memcmp(ob->p + i, rep, rl) == 0) {
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
                         ? bytelevel(t, pre, s, p, plen, st, ob, os)
                         : metaspace(pre, p, plen, st, ob, os);
            if (rc != 0)
                return -1;
        }
        cur ^= 1;
    }
    *which = cur ^ 1;
    return 0;
}
