/*
 * tokenizer_normalize.c - the normalizers HF applies to each text piece that
 * is not an added token: NFC/NFD/NFKC/NFKD (utf8proc), Replace with a literal
 * string pattern, Prepend; a Sequence is the list applied in order.
 *
 * Unicode normalization runs through utf8proc's buffer-taking calls
 * (decompose into a reused UTF-32 scratch, compose and re-encode in place),
 * so no call allocates once the scratch is large enough. NFC leaves text made
 * only of code points below U+0300 unchanged (nothing there decomposes or
 * combines as a second element), so such text skips utf8proc entirely: that is
 * every ASCII prompt.
 */
#include "model/tokenizer_internal.h"

#include <string.h>
#include <stdlib.h>
#include <utf8proc.h>

/* True when no byte can start a code point >= U+0300 (lead bytes >= 0xCC). */
static bool below_u0300(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)p[i] >= 0xCC)
            return false;
    return true;
}

static bool ascii_only(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)p[i] >= 0x80)
            return false;
    return true;
}

/* Unicode normalization of in[0..len) into dst with the given utf8proc options. */
static int unicode_norm(tok_scratch *s, const char *in, size_t len, utf8proc_option_t opt,
                        tok_buf *dst)
{
    for (;;) {
        utf8proc_ssize_t n = utf8proc_decompose((const utf8proc_uint8_t *)in, (utf8proc_ssize_t)len,
                                                s->u32, (utf8proc_ssize_t)s->u32_cap, opt);
        if (n < 0)
            return -1;
        /* reencode writes UTF-8 (<= 4 bytes per code point) plus a NUL in place */
        if ((size_t)n + 1 <= s->u32_cap) {
            utf8proc_ssize_t bytes = utf8proc_reencode(s->u32, n, opt);
            if (bytes < 0)
                return -1;
            if (tok_buf_reserve(dst, (size_t)bytes + 1) != 0)
                return -1;
            memcpy(dst->p, s->u32, (size_t)bytes);
            dst->n = (size_t)bytes;
            return 0;
        }
        size_t cap = s->u32_cap ? s->u32_cap : 256;
        while (cap < (size_t)n + 1)
            cap *= 2;
        int32_t *u = realloc(s->u32, cap * sizeof *u);
        if (!u)
            return -1;
        s->u32 = u;
        s->u32_cap = cap;
    }
}

/* Replaces every non-overlapping occurrence of pat, scanning left to right. */
static int replace_all(const tok_norm *n, const char *in, size_t len, tok_buf *dst)
{
    size_t worst = len;
    if (n->content_len > n->pattern_len)
        worst = len / n->pattern_len * n->content_len + len;
    if (tok_buf_reserve(dst, worst + 1) != 0)
        return -1;
    size_t o = 0, i = 0;
    while (i < len) {
        if (len - i >= n->pattern_len && in[i] == n->pattern[0] &&
            memcmp(in + i, n->pattern, n->pattern_len) == 0) {
            memcpy(dst->p + o, n->content, n->content_len);
            o += n->content_len;
            i += n->pattern_len;
        } else {
            dst->p[o++] = in[i++];
        }
    }
    dst->n = o;
    return 0;
}

int tok_normalize(const tokenizer *t, tok_scratch *s, const char *in, size_t len,
                  const char **out, size_t *out_len)
{
    const char *cur = in;
    size_t cur_len = len;
    int which = 0;
    for (size_t k = 0; k < t->n_norms; k++) {
        const tok_norm *n = &t->norms[k];
        tok_buf *dst = &s->norm[which];
        int rc = 0;
        switch (n->kind) {
        case TOK_NORM_NFC:
            if (below_u0300(cur, cur_len))
                continue;
            rc = unicode_norm(s, cur, cur_len, UTF8PROC_STABLE | UTF8PROC_COMPOSE, dst);
            break;
        case TOK_NORM_NFD:
            if (ascii_only(cur, cur_len))
                continue;
            rc = unicode_norm(s, cur, cur_len, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE, dst);
            break;
        case TOK_NORM_NFKC:
            if (ascii_only(cur, cur_len))
                continue;
            rc = unicode_norm(s, cur, cur_len,
                              UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT, dst);
            break;
        case TOK_NORM_NFKD:
            if (ascii_only(cur, cur_len))
                continue;
            rc = unicode_norm(s, cur, cur_len,
                              UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, dst);
            break;
        case TOK_NORM_REPLACE:
            if (!memmem(cur, cur_len, n->pattern, n->pattern_len))
                continue;
            rc = replace_all(n, cur, cur_len, dst);
            break;
        case TOK_NORM_PREPEND:
            if (cur_len == 0)
                continue;
            rc = tok_buf_reserve(dst, n->content_len + cur_len + 1);
            if (rc == 0) {
                memcpy(dst->p, n->content, n->content_len);
                memcpy(dst->p + n->content_len, cur, cur_len);
                dst->n = n->content_len + cur_len;
            }
            break;
        }
        if (rc != 0)
            return -1;
        cur = dst->p;
        cur_len = dst->n;
        which ^= 1;
    }
    *out = cur;
    *out_len = cur_len;
    return 0;
}
