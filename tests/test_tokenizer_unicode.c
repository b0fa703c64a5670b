/*
 * test_tokenizer_unicode.c - the tokenizer's shortcuts around its Unicode
 * libraries give what the libraries give.
 *
 * - NFC cut at quick code points (nfc_quick.c): the table holds what it claims
 *   on the code points whose rules differ (marks, Hangul jamo, a Sinhala vowel
 *   sign that composes as a starter, singletons, exclusions), and on random text
 *   from those classes the normalizer's output equals utf8proc's NFC of the whole
 *   text, split at the code points HF leaves alone, as the normalizer ran before
 *   (less a utf8proc defect that deleted U+11A7 after a Hangul LV syllable), and NFC
 *   and NFKC keep U+11A7 there as HF does;
 * - the GPT-2 pattern without a regex engine (gpt2_match.c): its matches equal
 *   those of the pattern compiled by PCRE2 with the same classes (the tokenizer's
 *   matcher before it), for every code point in contexts that tell its class
 *   apart, and from every match start in random text drawn from the classes'
 *   edges, ASCII alone and mixed with the rest of Unicode.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer/internal.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/lib/unicode_oracle.h"
#include "tests/lib/testutil.h"

static uint64_t next(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

/* ---- NFC cut at quick code points ------------------------------------------------ */

START_TEST(test_nfc_quick_table)
{
    ck_assert_int_eq(tok_nfc_quick_init(), 0);
    for (uint32_t cp = 0; cp < 0x300; cp++)
        ck_assert_msg(tok_nfc_quick(cp), "U+%04X below U+0300 is not quick", cp);
    /* marks; Hangul V and T; a vowel sign that composes with ccc 0; singletons; a
     * composition exclusion; a decomposing mark; anything above the BMP */
    static const uint32_t slow[] = { 0x0301, 0x0327, 0x1161, 0x11A8, 0x0DCF, 0x0DCA, 0x2000,
                                     0x212B, 0x2126, 0x0958, 0x0344, 0x0340, 0x1F600, 0x1109A };
    for (size_t i = 0; i < sizeof slow / sizeof slow[0]; i++)
        ck_assert_msg(!tok_nfc_quick(slow[i]), "U+%04X is quick", slow[i]);
    static const uint32_t fast[] = { 0x201C, 0x2014, 0x0439, 0x0438, 0xAC00, 0xAC01, 0x1100,
                                     0x4E00, 0x0DD9, 0x00E9, 0x3042 };
    for (size_t i = 0; i < sizeof fast / sizeof fast[0]; i++)
        ck_assert_msg(tok_nfc_quick(fast[i]), "U+%04X is not quick", fast[i]);
}
END_TEST

START_TEST(test_nfc_chunks)
{
    /* code points whose neighbours NFC changes or that it changes itself, and quick ones
     * beside them: ASCII, precomposed and bare letters with marks of several classes,
     * Hangul L / V / T / LV / LVT, Sinhala and Devanagari vowel signs and nukta, Greek,
     * singletons, exclusions, code points HF's Unicode 9.0 leaves alone (U+0898, U+1ABF,
     * U+1DF6), Chakma's composing starter and other supplementary ones */
    static const uint32_t pool[] = {
        'a',     'e',     'A',     '<',     '=',     ' ',     'u',     0x00E9,  0x00FC,  0x0300,
        0x0301,  0x0308,  0x0323,  0x0327,  0x0338,  0x0345,  0x0344,  0x0340,  0x03B1,  0x1F71,
        0x0386,  0x1100,  0x1161,  0x11A8,  0xAC00,  0xAC01,  0x0DD9,  0x0DCF,  0x0DCA,  0x0DDA,
        0x0928,  0x093C,  0x0929,  0x0958,  0x2000,  0x212B,  0x2126,  0x201C,  0x2014,  0x0438,
        0x0306,  0x0439,  0x4E00,  0x0898,  0x1ABF,  0x1DF6,  0x05B0,  0x05B8,  0x0F73,  0x0E33,
        0x1F600, 0x11099, 0x110BA, 0x1109A, 0x11131, 0x11127, 0x1D15E, 0x1D165, 0x02FF, 0x3099,
        0x11A7,  0x11C2,  0x11C3,
    };
    enum { NPOOL = sizeof pool / sizeof pool[0], MAXCP = 24 };
    const char *json = "{\"normalizer\":{\"type\":\"NFC\"},\"model\":{\"type\":\"BPE\","
                       "\"vocab\":{\"a\":0},\"merges\":[]}}";
    layad_error err;
    tokenizer *t = tokenizer_load_mem(json, strlen(json), "nfc.json", &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    tok_scratch *s = calloc(1, sizeof *s);
    ck_assert_ptr_nonnull(s);
    char text[MAXCP * 4], want[MAXCP * 4 * 3 + 4];
    uint64_t x = 20261205;
    long changed = 0;
    for (int it = 0; it < 200000; it++) {
        size_t n = 0;
        const size_t cps = next(&x) % (MAXCP + 1);
        /* mostly quick text with a few others, as in requests, or anything from the pool */
        const bool sparse = next(&x) & 1;
        for (size_t k = 0; k < cps; k++) {
            const uint64_t r = next(&x);
            const uint32_t cp = sparse && r % 4 ? (uint32_t)"ae u"[r / 4 % 4] : pool[r / 4 % NPOOL];
            n += tok_utf8_encode(cp, text + n);
        }
        const char *got;
        size_t got_n;
        const int rc = tok_normalize(t, s, text, n, &got, &got_n);
        const size_t want_n = nfc_whole(text, n, want);
        if (rc != 0 || want_n == (size_t)-1 || got_n != want_n || memcmp(got, want, want_n) != 0)
            ck_abort_msg("text %d: rc %d, or NFC differs", it, rc);
        changed += got_n != n || memcmp(got, text, n) != 0;
    }
    printf("NFC by chunks: 200000 texts as the whole-text NFC, %ld of them changed by it\n", changed);
    ck_assert_int_gt(changed, 10000);
    tok_scratch_free(s);
    tokenizer_free(t);
}
END_TEST

START_TEST(test_hangul_11a7)
{
    /* HF (tokenizers 0.23.3, NFC and NFKC normalize_str) leaves U+11A7 after an LV syllable,
     * made of jamo or not, where utf8proc before 2.11 deletes it; U+11A8 joins the syllable */
    static const char *const cases[][2] = { { "x\uAC00\u11A7y", "x\uAC00\u11A7y" },
                                            { "\u1100\u1161\u11A7", "\uAC00\u11A7" },
                                            { "x\uAC00\u11A8y", "x\uAC01y" } };
    for (int form = 0; form < 2; form++) {
        char json[160];
        snprintf(json, sizeof json, "{\"normalizer\":{\"type\":\"%s\"},\"model\":{\"type\":\"BPE\","
                 "\"vocab\":{\"a\":0},\"merges\":[]}}", form ? "NFKC" : "NFC");
        layad_error err;
        tokenizer *t = tokenizer_load_mem(json, strlen(json), "hangul.json", &err);
        ck_assert_msg(t != NULL, "%s", err.msg);
        tok_scratch *s = calloc(1, sizeof *s);
        ck_assert_ptr_nonnull(s);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            const char *got;
            size_t got_n;
            ck_assert_int_eq(tok_normalize(t, s, cases[k][0], strlen(cases[k][0]), &got, &got_n), 0);
            ck_assert_msg(got_n == strlen(cases[k][1]) && memcmp(got, cases[k][1], got_n) == 0, "%s case %zu",
                          form ? "NFKC" : "NFC", k);
        }
        tok_scratch_free(s);
        tokenizer_free(t);
    }
}
END_TEST

/* ---- the GPT-2 pattern without a regex engine ------------------------------------ */

/* The pattern as PCRE2 compiles it, with its match data: the oracle of both tests below. */
static pcre2_code *re;
static pcre2_match_data *md;

static void oracle_open(void)
{
    re = gpt2_regex(true);
    md = pcre2_match_data_create(1, NULL);
    ck_assert_ptr_nonnull(re);
    ck_assert_ptr_nonnull(md);
}

static void oracle_close(void)
{
    pcre2_match_data_free(md);
    pcre2_code_free(re);
}

/* Each of the tests below: every match equal to the pattern's (tested before asserting:
 * each check assertion writes a record, millions here). */
static long same_matches(const char *text, size_t n, const char *what)
{
    char why[128];
    const long k = gpt2_same_matches(re, md, text, n, why, sizeof why);
    if (k < 0)
        ck_abort_msg("%s %s", what, why);
    return k;
}

START_TEST(test_gpt2_every_code_point)
{
    /* "a" c "1" c "!" c " " c: joins c to a letter, a digit or punctuation, or leaves it
     * alone, as its class says, so each class tiles the text differently */
    oracle_open();
    char text[32], what[32];
    long matches = 0;
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
            continue;
        char c[4];
        const size_t l = tok_utf8_encode(cp, c);
        size_t n = 0;
        for (const char *q = "a1! "; *q; q++) {
            text[n++] = *q;
            memcpy(text + n, c, l);
            n += l;
        }
        snprintf(what, sizeof what, "U+%04X", cp);
        matches += same_matches(text, n, what);
    }
    printf("GPT-2 pattern, every code point in context: %ld matches equal to PCRE2's\n", matches);
    oracle_close();
}
END_TEST

START_TEST(test_gpt2_random_text)
{
    /* the ASCII classes' edges (every whitespace character, the contractions' letters,
     * digits, punctuation, controls, DEL, NUL) and beyond ASCII: White_Space (U+0085,
     * U+00A0, U+2028, U+3000), U+180E (not White_Space), letters (Latin, Cyrillic, CJK,
     * Hangul, one of HF's newer letters), numbers of all three kinds (Arabic-Indic, a
     * superscript, a Roman numeral, one of HF's newer digits), combining marks, emoji */
    static const uint32_t pool[] = {
        ' ',     '\t',    '\n',    0x0B,    '\f',    '\r',    '\'',    's',     't',     'r',
        'e',     'v',     'l',     'm',     'd',     'a',     'Z',     '0',     '9',     '!',
        '-',     '.',     0x1F,    0x7F,    0x01,    0,       0x0085,  0x00A0,  0x2028,  0x3000,
        0x180E,  0x00E9,  0x0439,  0x4E00,  0xAC00,  0x1C89,  0x0660,  0x00B2,  0x2160,  0x10D40,
        0x0301,  0x0308,  0x1F600, 0x201C,  0x2014,  0x200B,  0xFEFF,  0x05D0,  0x0E01,  0x0E31,
    };
    enum { NPOOL = sizeof pool / sizeof pool[0], MAXCP = 48 };
    oracle_open();
    char text[MAXCP * 4], what[32];
    uint64_t x = 20261205;
    long matches = 0;
    for (int it = 0; it < 40000; it++) {
        /* half the texts ASCII only (the first 26 of the pool), half anything */
        const size_t cps = next(&x) % (MAXCP + 1), span = it & 1 ? NPOOL : 26;
        size_t n = 0;
        for (size_t k = 0; k < cps; k++)
            n += tok_utf8_encode(pool[next(&x) % span], text + n);
        snprintf(what, sizeof what, "text %d", it);
        matches += same_matches(text, n, what);
    }
    printf("GPT-2 pattern on random text: %ld matches equal to PCRE2's\n", matches);
    oracle_close();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tokenizer_unicode");
    TCase *tc = tcase_create("tokenizer_unicode");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_nfc_quick_table);
    tcase_add_test(tc, test_nfc_chunks);
    tcase_add_test(tc, test_hangul_11a7);
    tcase_add_test(tc, test_gpt2_every_code_point);
    tcase_add_test(tc, test_gpt2_random_text);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
