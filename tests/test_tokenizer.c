/*
 * test_tokenizer.c - the tokenizer against Hugging Face `tokenizers`.
 *
 * - fixtures: for every family in tests/fixtures/tokenizer/families.txt, the
 *   committed strings (scripts/tokenizer-gen) must encode to exactly HF's ids;
 *   families whose tokenizer.json is absent (the real ModernBERT vocabulary in
 *   $LAYAD_SHARED/data) SKIP with a message;
 * - invalid UTF-8 is a 400 and appends nothing; the empty string gives no ids;
 * - files with components or options we do not implement fail to load with an
 *   error naming them;
 * - threads share one tokenizer: concurrent encodes give the single-thread ids;
 *   the per-thread word cache keeps tokenizers apart, and the text cache returns what
 *   an encode with empty caches does, around its limits and past its evictions.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer/tokenizer.h"
#include "tests/lib/tok_corpus.h"
#include "tests/lib/testutil.h"

#define GEMMA "tests/fixtures/tokenizer/gemma-like.json"
#define TINY "config/tiny-tokenizer.json"

static tokenizer *load_or_die(const char *path)
{
    layad_error err;
    tokenizer *t = tokenizer_load(path, &err);
    ck_assert_msg(t != NULL, "%s: %s", path, err.msg);
    return t;
}

/* ---- fixtures ----------------------------------------------------------------- */

START_TEST(test_fixtures)
{
    FILE *f = fopen("tests/fixtures/tokenizer/families.txt", "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    int families = 0;
    while (fgets(line, sizeof line, f)) {
        char fam[128], tok[256], variant[128];
        if (line[0] == '#' || sscanf(line, "%127s %255s %127s", fam, tok, variant) != 3)
            continue;
        char path[512];
        if (strncmp(tok, "$SHARED/", 8) == 0)
            snprintf(path, sizeof path, "%s/%s", tu_shared(), tok + 8);
        else
            snprintf(path, sizeof path, "%s", tok);
        FILE *probe = fopen(path, "r");
        if (!probe) {
            printf("SKIP tokenizer fixture %s: %s absent\n", fam, path);
            continue;
        }
        fclose(probe);
        layad_error err;
        tokenizer *t = tok_corpus_load(path, variant, &err);
        ck_assert_msg(t != NULL, "%s: %s", fam, err.msg);
        char fixture[512];
        snprintf(fixture, sizeof fixture, "tests/fixtures/tokenizer/%s.jsonl", fam);
        tok_corpus_result r;
        ck_assert_msg(tok_corpus_compare(t, fixture, 5, &r, &err) == 0, "%s", err.msg);
        printf("tokenizer fixture %-24s %4zu strings, %zu mismatches\n", fam, r.strings, r.mismatches);
        ck_assert_msg(r.strings >= 100, "%s: only %zu strings", fam, r.strings);
        ck_assert_msg(r.mismatches == 0, "%s: %zu of %zu strings differ from HF", fam, r.mismatches,
                      r.strings);
        tokenizer_free(t);
        families++;
    }
    fclose(f);
    ck_assert_int_ge(families, 2); /* gemma and tiny are always in the repository */
}
END_TEST

/* ---- basic contract ----------------------------------------------------------- */

START_TEST(test_empty_and_append)
{
    tokenizer *t = load_or_die(GEMMA);
    layad_error err;
    tok_ids ids = { 0 };
    ck_assert_int_eq(tokenizer_encode(t, "", 0, &ids, &err), 0);
    ck_assert_uint_eq(ids.n, 0);
    /* encode appends: a second call keeps the first ids in front */
    ck_assert_int_eq(tokenizer_encode(t, "hello world", 11, &ids, &err), 0);
    size_t n1 = ids.n;
    ck_assert_uint_gt(n1, 0);
    ck_assert_uint_le(n1, 64);
    int32_t first[64];
    memcpy(first, ids.ids, n1 * sizeof *first);
    ck_assert_int_eq(tokenizer_encode(t, "hello world", 11, &ids, &err), 0);
    ck_assert_uint_eq(ids.n, 2 * n1);
    ck_assert_mem_eq(ids.ids, first, n1 * sizeof *first);
    ck_assert_mem_eq(ids.ids + n1, first, n1 * sizeof *first);
    /* special ids of the Gemma layout */
    ck_assert_int_eq(tokenizer_token_id(t, "<pad>"), 0);
    ck_assert_int_eq(tokenizer_token_id(t, "<eos>"), 1);
    ck_assert_int_eq(tokenizer_token_id(t, "<bos>"), 2);
    ck_assert_int_eq(tokenizer_token_id(t, "<unk>"), 3);
    ck_assert_int_eq(tokenizer_token_id(t, "<mask>"), 4);
    ck_assert_int_eq(tokenizer_token_id(t, "<0x41>"), 5 + 0x41);
    ck_assert_int_eq(tokenizer_token_id(t, "no such token at all"), -1);
    ck_assert_uint_gt(tokenizer_vocab_size(t), 4000);
    for (size_t i = 0; i < ids.n; i++)
        ck_assert_uint_lt((size_t)ids.ids[i], tokenizer_vocab_size(t));
    free(ids.ids);
    tokenizer_free(t);
}
END_TEST

START_TEST(test_modernbert_specials)
{
    char path[512];
    snprintf(path, sizeof path, "%s/data/modernbert-tokenizer.json", tu_shared());
    FILE *probe = fopen(path, "r");
    if (!probe) {
        printf("SKIP modernbert specials: %s absent\n", path);
        return;
    }
    fclose(probe);
    tokenizer *t = load_or_die(path);
    ck_assert_int_eq(tokenizer_token_id(t, "[UNK]"), 50280);
    ck_assert_int_eq(tokenizer_token_id(t, "[CLS]"), 50281);
    ck_assert_int_eq(tokenizer_token_id(t, "[SEP]"), 50282);
    ck_assert_int_eq(tokenizer_token_id(t, "[PAD]"), 50283);
    ck_assert_int_eq(tokenizer_token_id(t, "[MASK]"), 50284);
    /* [MASK] has lstrip: the space before it belongs to it */
    layad_error err;
    tok_ids a = { 0 }, b = { 0 };
    ck_assert_int_eq(tokenizer_encode(t, "x [MASK]", 8, &a, &err), 0);
    ck_assert_int_eq(tokenizer_encode(t, "x[MASK]", 7, &b, &err), 0);
    ck_assert_uint_eq(a.n, 2);
    ck_assert_uint_eq(b.n, 2);
    ck_assert_int_eq(a.ids[1], 50284);
    ck_assert_int_eq(a.ids[0], b.ids[0]);
    free(a.ids);
    free(b.ids);
    tokenizer_free(t);
}
END_TEST

/* Added tokens one byte long ("#" normalized, "%" not, in the tiny-added-edge variant): the
 * splitter looks for a start only where the next byte can continue a pattern, and a pattern of
 * one byte must count as continued by any byte. Each is its own id, wherever it stands. */
START_TEST(test_one_byte_added_tokens)
{
    layad_error err;
    tokenizer *t = tok_corpus_load(TINY, "tiny-added-edge", &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    const int32_t hash = tokenizer_token_id(t, "#"), pct = tokenizer_token_id(t, "%");
    ck_assert_int_ge(hash, 0);
    ck_assert_int_ge(pct, 0);
    static const struct { const char *text; int hashes, pcts; } cases[] = {
        {"#", 1, 0}, {"%", 0, 1}, {"a#b", 1, 0}, {"a%b", 0, 1}, {"##%%", 2, 2}, {"x #y %z", 1, 1},
        {"payout#", 1, 0}, {"%payout", 0, 1}, {"[CLS]#%[CLS]", 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tok_ids ids = { 0 };
        ck_assert_int_eq(tokenizer_encode(t, cases[i].text, strlen(cases[i].text), &ids, &err), 0);
        int hashes = 0, pcts = 0;
        for (size_t k = 0; k < ids.n; k++) {
            hashes += ids.ids[k] == hash;
            pcts += ids.ids[k] == pct;
        }
        ck_assert_msg(hashes == cases[i].hashes && pcts == cases[i].pcts, "\"%s\": %d # and %d %%", cases[i].text,
                      hashes, pcts);
        free(ids.ids);
    }
    tokenizer_free(t);
}
END_TEST

/* A Metaspace tokenizer whose merges join two replacements first ("\u2581 \u2581" ranks 0), so
 * that a word cut one replacement too late shows in its ids: with the Replace normalizer its
 * words are cut in the normalized text (encode.c, metaspace_words); without it the stage
 * replaces the spaces and cuts its own copy (pretok.c). Both must give HF's words. */
#define META_VOCAB "\"vocab\":{\"\u2581\":0,\"a\":1,\"b\":2,\"\u2581\u2581\":3,\"\u2581a\":4,\"\u2581b\":5}," \
                   "\"merges\":[\"\u2581 \u2581\",\"\u2581 a\",\"\u2581 b\"]"
#define META_PRE "\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\u2581\"," \
                 "\"prepend_scheme\":\"always\",\"split\":true}"
#define META_JSON(norm) "{\"added_tokens\":[],\"normalizer\":" norm "," META_PRE ",\"model\":{\"type\":\"BPE\"," \
                        META_VOCAB "}}"

START_TEST(test_metaspace_words_cut_in_place)
{
    layad_error err;
    const char *direct = META_JSON("{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\u2581\"}");
    const char *copied = META_JSON("null");
    tokenizer *a = tokenizer_load_mem(direct, strlen(direct), "meta-direct", &err);
    ck_assert_msg(a != NULL, "%s", err.msg);
    tokenizer *b = tokenizer_load_mem(copied, strlen(copied), "meta-copied", &err);
    ck_assert_msg(b != NULL, "%s", err.msg);
    /* HF's ids (tokenizers 0.23.3 on the same JSON): "a  b" is "\u2581a" "\u2581" "\u2581b" */
    static const struct { const char *text; int n; int32_t ids[6]; } want[] = {
        {"a  b", 3, {4, 0, 5}}, {"a   b", 4, {4, 0, 0, 5}}, {"  a", 2, {0, 4}}, {"ab", 2, {4, 2}},
        {"b ", 2, {5, 0}}, {"\u2581\u2581", 2, {0, 0}},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        tok_ids ids = { 0 };
        ck_assert_int_eq(tokenizer_encode(a, want[i].text, strlen(want[i].text), &ids, &err), 0);
        ck_assert_msg(ids.n == (size_t)want[i].n && memcmp(ids.ids, want[i].ids, ids.n * sizeof *ids.ids) == 0,
                      "\"%s\": %zu ids, the first %d", want[i].text, ids.n, ids.n ? ids.ids[0] : -1);
        free(ids.ids);
    }
    /* random texts over a, b, space and the replacement: both tokenizers agree */
    unsigned seed = 11;
    static const char *const parts[] = {"a", "b", " ", "\u2581"};
    for (int k = 0; k < 5000; k++) {
        char text[64];
        size_t n = 0;
        for (int m = rand_r(&seed) % 12; m > 0; m--) {
            const char *p = parts[rand_r(&seed) % 4];
            memcpy(text + n, p, strlen(p));
            n += strlen(p);
        }
        tok_ids x = { 0 }, y = { 0 };
        ck_assert_int_eq(tokenizer_encode(a, text, n, &x, &err), 0);
        ck_assert_int_eq(tokenizer_encode(b, text, n, &y, &err), 0);
        ck_assert_msg(x.n == y.n && (x.n == 0 || memcmp(x.ids, y.ids, x.n * sizeof *x.ids) == 0),
                      "text %d: %zu ids against %zu", k, x.n, y.n);
        free(x.ids);
        free(y.ids);
    }
    tokenizer_free(a);
    tokenizer_free(b);
}
END_TEST

/* ---- invalid UTF-8 ------------------------------------------------------------ */

START_TEST(test_invalid_utf8)
{
    static const struct { const char *s; size_t n; } bad[] = {
        { "\x80", 1 },                 /* lone continuation byte */
        { "ab\xC3", 3 },               /* truncated 2-byte sequence */
        { "\xC0\x80", 2 },             /* overlong NUL */
        { "\xE0\x80\xAF", 3 },         /* overlong '/' */
        { "\xED\xA0\x80", 3 },         /* UTF-16 surrogate */
        { "\xF4\x90\x80\x80", 4 },     /* > U+10FFFF */
        { "\xF5\x80\x80\x80", 4 },     /* invalid lead byte */
        { "ok \xFF ok", 7 },
        { "\xE2\x82", 2 },             /* truncated euro sign */
    };
    const char *paths[] = { GEMMA, TINY };
    for (size_t p = 0; p < 2; p++) {
        tokenizer *t = load_or_die(paths[p]);
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            tok_ids ids = { 0 };
            layad_error err;
            ck_assert_int_eq(tokenizer_encode(t, "abc", 3, &ids, &err), 0);
            size_t before = ids.n;
            ck_assert_int_eq(tokenizer_encode(t, bad[i].s, bad[i].n, &ids, &err), -1);
            ck_assert_int_eq(err.status, 400);
            ck_assert_uint_eq(ids.n, before);
            free(ids.ids);
        }
        /* valid edge cases: U+10FFFF, a NUL byte, U+FFFF */
        tok_ids ids = { 0 };
        layad_error err;
        ck_assert_int_eq(tokenizer_encode(t, "\xF4\x8F\xBF\xBF a\0b \xEF\xBF\xBF", 13, &ids, &err), 0);
        ck_assert_uint_gt(ids.n, 0);
        free(ids.ids);
        tokenizer_free(t);
    }
}
END_TEST

/* ---- unsupported components ----------------------------------------------------- */

/* The tiny tokenizer with one part replaced (JSON text spliced at the marker). */
static void expect_load_error(const char *json, const char *needle)
{
    layad_error err;
    tokenizer *t = tokenizer_load_mem(json, strlen(json), "case.json", &err);
    ck_assert_msg(t == NULL, "loaded although \"%s\" is not supported", needle);
    ck_assert_int_eq(err.status, 500);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "error \"%s\" does not name \"%s\"", err.msg, needle);
}

#define MODEL "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\"]}"

START_TEST(test_unsupported)
{
    expect_load_error("{\"normalizer\":{\"type\":\"Lowercase\"}," MODEL "}", "Lowercase");
    expect_load_error("{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"},"
                      "{\"type\":\"BertNormalizer\"}]}," MODEL "}", "BertNormalizer");
    expect_load_error("{\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"Regex\":\" +\"},"
                      "\"content\":\"_\"}," MODEL "}", "Regex");
    expect_load_error("{\"pre_tokenizer\":{\"type\":\"Whitespace\"}," MODEL "}", "Whitespace");
    expect_load_error("{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},"
                      "\"behavior\":\"Isolated\",\"invert\":false}," MODEL "}", "Split");
    expect_load_error("{\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
                      "\"use_regex\":true,\"shiny\":1}," MODEL "}", "shiny");
    expect_load_error("{\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"_\","
                      "\"prepend_scheme\":\"sometimes\"}," MODEL "}", "sometimes");
    expect_load_error("{\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"_\","
                      "\"add_prefix_space\":false}," MODEL "}", "prepend_scheme");
    expect_load_error("{\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}}", "WordPiece");
    expect_load_error("{\"model\":{\"type\":\"Unigram\",\"vocab\":[]}}", "Unigram");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"dropout\":0.1,\"vocab\":{},\"merges\":[]}}", "dropout");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"continuing_subword_prefix\":\"##\",\"vocab\":{},"
                      "\"merges\":[]}}", "continuing_subword_prefix");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"end_of_word_suffix\":\"</w>\",\"vocab\":{},"
                      "\"merges\":[]}}", "end_of_word_suffix");
    expect_load_error("{\"truncation\":{\"max_length\":512}," MODEL "}", "truncation");
    expect_load_error("{\"padding\":{\"strategy\":\"BatchLongest\"}," MODEL "}", "padding");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a c\"]}}", "merge 1");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a a a\"]}}", "merge 1");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"aa\":1},\"merges\":[\"a a\",[\"a\",\"a\"]]}}",
                      "merge 2");
    expect_load_error("{\"added_tokens\":[{\"id\":5,\"content\":\"x\",\"sparkle\":true}]," MODEL "}", "sparkle");
    expect_load_error("{\"extra\":1," MODEL "}", "extra");
    expect_load_error("{" MODEL, "invalid JSON");
    expect_load_error("[]", "not a JSON object");

    /* both merge encodings load and give the same ids */
    const char *pairs = "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[[\"a\",\"b\"]]}}";
    const char *strs = "{" MODEL "}";
    layad_error err;
    tokenizer *t1 = tokenizer_load_mem(pairs, strlen(pairs), "pairs", &err);
    tokenizer *t2 = tokenizer_load_mem(strs, strlen(strs), "strings", &err);
    ck_assert_ptr_nonnull(t1);
    ck_assert_ptr_nonnull(t2);
    tok_ids a = { 0 }, b = { 0 };
    ck_assert_int_eq(tokenizer_encode(t1, "abab", 4, &a, &err), 0);
    ck_assert_int_eq(tokenizer_encode(t2, "abab", 4, &b, &err), 0);
    ck_assert_uint_eq(a.n, 2);
    ck_assert_uint_eq(b.n, 2);
    ck_assert_int_eq(a.ids[0], 2);
    ck_assert_int_eq(b.ids[1], 2);
    free(a.ids);
    free(b.ids);
    tokenizer_free(t1);
    tokenizer_free(t2);
}
END_TEST

START_TEST(test_load_missing_file)
{
    layad_error err;
    ck_assert_ptr_null(tokenizer_load("tests/fixtures/tokenizer/no-such-file.json", &err));
    ck_assert_int_eq(err.status, 500);
    ck_assert_ptr_nonnull(strstr(err.msg, "no-such-file.json"));
}
END_TEST

/* ---- threads ------------------------------------------------------------------ */

typedef struct thread_job {
    const tokenizer *t;
    const char *text;
    size_t len;
    const tok_ids *want;
    int ok;
} thread_job;

static void *encode_many(void *arg)
{
    thread_job *j = arg;
    j->ok = 1;
    tok_ids got = { 0 };
    for (int r = 0; r < 20 && j->ok; r++) {
        layad_error err;
        got.n = 0;
        if (tokenizer_encode(j->t, j->text, j->len, &got, &err) != 0 || got.n != j->want->n ||
            memcmp(got.ids, j->want->ids, got.n * sizeof *got.ids) != 0)
            j->ok = 0;
    }
    free(got.ids);
    return NULL;
}

START_TEST(test_threads_share)
{
    tokenizer *t = load_or_die(GEMMA);
    static const char *texts[] = {
        "The customer was charged twice; refund the duplicate payment today.",
        "変数 = 値 + 1 // 日本語のコメント 🇯🇵 café e\xCC\x81",
        "{\"state\": [1, 2.5, null], \"user\": \"<start_of_turn>hello [MASK]\"}",
        "    indented\tcode();\r\n    return x->y[3];",
    };
    enum { NT = 8 };
    tok_ids want[4] = { { 0 } };
    layad_error err;
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(tokenizer_encode(t, texts[i], strlen(texts[i]), &want[i], &err), 0);
    pthread_t th[NT];
    thread_job jobs[NT];
    for (int i = 0; i < NT; i++) {
        jobs[i] = (thread_job){ t, texts[i % 4], strlen(texts[i % 4]), &want[i % 4], 0 };
        ck_assert_int_eq(pthread_create(&th[i], NULL, encode_many, &jobs[i]), 0);
    }
    for (int i = 0; i < NT; i++) {
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
        ck_assert_msg(jobs[i].ok, "thread %d got different ids", i);
    }
    for (int i = 0; i < 4; i++)
        free(want[i].ids);
    tokenizer_free(t);
}
END_TEST

/* ---- word cache ----------------------------------------------------------------- */

static void encode_into(const tokenizer *t, const char *text, tok_ids *ids)
{
    layad_error err;
    ids->n = 0;
    ck_assert_int_eq(tokenizer_encode(t, text, strlen(text), ids, &err), 0);
}

START_TEST(test_cache_per_tokenizer)
{
    /* the same words through two tokenizers, alternately and through one freed and
     * reloaded (likely at the same address): each must get its own ids, equal to
     * what it computes with an empty cache */
    static const char *text = "refund the customer today, refund the customer";
    tok_ids a_cold = { 0 }, b_cold = { 0 }, got = { 0 };
    tokenizer *a = load_or_die(TINY), *b = load_or_die(GEMMA);
    tokenizer_thread_cache_clear();
    encode_into(a, text, &a_cold);
    tokenizer_thread_cache_clear();
    encode_into(b, text, &b_cold);
    ck_assert(a_cold.n != b_cold.n || memcmp(a_cold.ids, b_cold.ids, a_cold.n * sizeof(int32_t)) != 0);
    for (int r = 0; r < 3; r++) {
        encode_into(a, text, &got);
        ck_assert_uint_eq(got.n, a_cold.n);
        ck_assert_mem_eq(got.ids, a_cold.ids, got.n * sizeof(int32_t));
        encode_into(b, text, &got);
        ck_assert_uint_eq(got.n, b_cold.n);
        ck_assert_mem_eq(got.ids, b_cold.ids, got.n * sizeof(int32_t));
    }
    tokenizer_free(a);
    tokenizer *b2 = load_or_die(GEMMA);
    encode_into(b2, text, &got);
    ck_assert_uint_eq(got.n, b_cold.n);
    ck_assert_mem_eq(got.ids, b_cold.ids, got.n * sizeof(int32_t));
    tokenizer_free(b2);
    a = load_or_die(TINY);
    encode_into(a, text, &got);
    ck_assert_uint_eq(got.n, a_cold.n);
    ck_assert_mem_eq(got.ids, a_cold.ids, got.n * sizeof(int32_t));
    free(a_cold.ids);
    free(b_cold.ids);
    free(got.ids);
    tokenizer_free(a);
    tokenizer_free(b);
}
END_TEST

START_TEST(test_cache_shared_by_two_tokenizers)
{
    /* two tokenizers of one file (a daemon serving two checkpoints of one tokenizer) take
     * turns on the same texts: each must keep its own entries, so every encode after the
     * first of each tokenizer hits. One slot per text, shared by both, would evict on
     * every turn and never hit. */
    static const char *head = "choice question : which team should handle this refund ?";
    char long_text[600] = "";
    while (strlen(long_text) < 400) /* past the text cache: only the word cache serves it */
        strcat(long_text, "refund the customer today please ");
    tokenizer *a = load_or_die(TINY), *b = load_or_die(TINY);
    tok_ids got = { 0 };
    size_t words, texts;
    tokenizer_thread_cache_clear();
    for (int r = 0; r < 3; r++) {
        encode_into(a, head, &got);
        encode_into(b, head, &got);
    }
    tokenizer_thread_cache_hits(&words, &texts);
    ck_assert_uint_eq(texts, 4);
    tokenizer_thread_cache_clear();
    encode_into(a, long_text, &got);
    encode_into(b, long_text, &got);
    size_t words_first, unused;
    tokenizer_thread_cache_hits(&words_first, &unused);
    encode_into(a, long_text, &got);
    encode_into(b, long_text, &got);
    tokenizer_thread_cache_hits(&words, &texts);
    /* the first turn hits only a word's repeats within the text; the second its first
     * occurrences too, unless the other tokenizer's turn evicted them */
    ck_assert_uint_eq(texts, 0);
    ck_assert_uint_gt(words_first, 0);
    ck_assert_uint_gt(words - words_first, words_first);
    free(got.ids);
    tokenizer_free(a);
    tokenizer_free(b);
}
END_TEST

/* Text hits of the second of two passes over CACHE_ROOM_TEXTS short texts, each pass
 * encoding every text through each of the n tokenizers in t in turn. */
#define CACHE_ROOM_TEXTS 200
static size_t second_pass_text_hits(tokenizer *const *t, int n)
{
    char text[96];
    tok_ids got = { 0 };
    size_t before = 0, after = 0, words;
    tokenizer_thread_cache_clear();
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            tokenizer_thread_cache_hits(&words, &before);
        for (int i = 0; i < CACHE_ROOM_TEXTS; i++) {
            snprintf(text, sizeof text, " option %d: refund the duplicate payment", i);
            for (int k = 0; k < n; k++)
                encode_into(t[k], text, &got);
        }
    }
    tokenizer_thread_cache_hits(&words, &after);
    free(got.ids);
    return after - before;
}

START_TEST(test_cache_room_per_tokenizer)
{
    /* A thread's caches grow with the tokenizers loaded, so two checkpoints served in turn
     * each keep about what one keeps alone. 200 texts fill a direct-mapped cache of 256
     * slots well short of evicting most; 400 in the same 256 would keep far fewer, and
     * two tokenizers would then hit on their second pass less than twice what one does. */
    tokenizer *t[2];
    tokenizer_thread_cleanup(); /* caches sized from here on, for what is loaded now */
    t[0] = load_or_die(TINY);
    const size_t alone = second_pass_text_hits(t, 1);
    t[1] = load_or_die(TINY);
    const size_t both = second_pass_text_hits(t, 2);
    ck_assert_msg(alone > CACHE_ROOM_TEXTS / 4, "alone %zu", alone);
    ck_assert_msg(both * 10 >= alone * 2 * 8, "two tokenizers kept %zu hits against %zu for one alone", both,
                  alone);
    tokenizer_free(t[0]);
    tokenizer_free(t[1]);
    tokenizer_thread_cleanup();
}
END_TEST

/* ---- text cache ---------------------------------------------------------------- */

/* Text i of test_text_cache's set, into buf: short option-like texts, texts around the text
 * cache's 240-byte limit, a short text of more ids than an entry holds, the empty text and
 * non-ASCII ones. */
static void cache_text(int i, char *buf, size_t cap)
{
    switch (i % 5) {
    case 0: snprintf(buf, cap, " option %d: refund the duplicate payment", i); break;
    case 1: { /* 236..244 bytes */
        size_t n = (size_t)snprintf(buf, cap, "%d", i);
        for (; n < 236 + (size_t)(i / 5 % 9); n++)
            buf[n] = "the customer wants a refund "[n % 28];
        buf[n] = '\0';
        break;
    }
    case 2: { /* ~100 one-letter words in 200 bytes */
        size_t n = 0;
        for (int k = 0; k < 100; k++)
            buf[n++] = (char)('a' + (i + k) % 26), buf[n++] = ' ';
        buf[n] = '\0';
        break;
    }
    case 3: snprintf(buf, cap, "%s", i % 2 ? "" : "<start_of_turn>user"); break;
    default:
        snprintf(buf, cap, "caf\xC3\xA9 \xE5\xA4\x89\xE6\x95\xB0 %d [MASK] \xF0\x9F\x87\xAF\xF0\x9F\x87\xB5", i);
        break;
    }
}

START_TEST(test_text_cache)
{
    /* every text encoded with the caches empty, then twice more in an order that evicts
     * (forward, then backward): each encode appends exactly the cold ids after what the
     * output held */
    enum { N = 600 };
    tokenizer *t = load_or_die(GEMMA);
    tok_ids *cold = calloc(N, sizeof *cold), got = { 0 }, head = { 0 };
    char buf[512];
    ck_assert_ptr_nonnull(cold);
    encode_into(t, "head: ", &head);
    for (int i = 0; i < N; i++) {
        cache_text(i, buf, sizeof buf);
        tokenizer_thread_cache_clear();
        encode_into(t, buf, &cold[i]);
    }
    layad_error err;
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < N; k++) {
            const int i = r ? N - 1 - k : k;
            cache_text(i, buf, sizeof buf);
            encode_into(t, "head: ", &got);
            ck_assert_int_eq(tokenizer_encode(t, buf, strlen(buf), &got, &err), 0);
            ck_assert_uint_eq(got.n, head.n + cold[i].n);
            if (cold[i].n)
                ck_assert_mem_eq(got.ids + head.n, cold[i].ids, cold[i].n * sizeof(int32_t));
        }
    for (int i = 0; i < N; i++)
        free(cold[i].ids);
    free(cold);
    free(got.ids);
    free(head.ids);
    tokenizer_free(t);
}
END_TEST

/* ---- long input ---------------------------------------------------------------- */

START_TEST(test_long_inputs)
{
    /* 100 KB of one letter is one pre-token word: BPE must stay O(n log n) */
    tokenizer *t = load_or_die(GEMMA);
    size_t n = 100 * 1024;
    char *s = malloc(n);
    ck_assert_ptr_nonnull(s);
    memset(s, 'a', n);
    tok_ids ids = { 0 };
    layad_error err;
    ck_assert_int_eq(tokenizer_encode(t, s, n, &ids, &err), 0);
    ck_assert_uint_gt(ids.n, 0);
    ck_assert_uint_le(ids.n, n);
    free(ids.ids);
    free(s);
    tokenizer_free(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tokenizer");
    TCase *tc = tcase_create("tokenizer");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_fixtures);
    tcase_add_test(tc, test_empty_and_append);
    tcase_add_test(tc, test_modernbert_specials);
    tcase_add_test(tc, test_one_byte_added_tokens);
    tcase_add_test(tc, test_metaspace_words_cut_in_place);
    tcase_add_test(tc, test_invalid_utf8);
    tcase_add_test(tc, test_unsupported);
    tcase_add_test(tc, test_load_missing_file);
    tcase_add_test(tc, test_threads_share);
    tcase_add_test(tc, test_cache_per_tokenizer);
    tcase_add_test(tc, test_cache_shared_by_two_tokenizers);
    tcase_add_test(tc, test_cache_room_per_tokenizer);
    tcase_add_test(tc, test_text_cache);
    tcase_add_test(tc, test_long_inputs);
    suite_add_tcase(s, tc);
    int failed = tu_run(s);
    tokenizer_thread_cleanup();
    return failed;
}
