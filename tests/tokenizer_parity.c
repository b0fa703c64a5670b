/*
 * tokenizer_parity.c - full-corpus comparison of layad's tokenizer with HF.
 *
 *   build/tests/tokenizer_parity TOKENIZER.json CORPUS.jsonl [VARIANT|- [MAX_REPORT]]
 *
 * Prints "<corpus>: N strings, M mismatches" and exits 1 when M > 0. Run by
 * scripts/tokenizer-parity over the corpora scripts/tokenizer-gen writes.
 */
#include <stdio.h>
#include <stdlib.h>

#include "model/tokenizer/tokenizer.h"
#include "tests/lib/tok_corpus.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s TOKENIZER.json CORPUS.jsonl [VARIANT|- [MAX_REPORT]]\n", argv[0]);
        return 2;
    }
    layad_error err;
    tokenizer *t = tok_corpus_load(argv[1], argc > 3 ? argv[3] : NULL, &err);
    if (!t) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    tok_corpus_result r;
    int rc = tok_corpus_compare(t, argv[2], argc > 4 ? strtoul(argv[4], NULL, 10) : 20, &r, &err);
    tokenizer_free(t);
    tokenizer_thread_cleanup();
    if (rc != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    printf("%s: %zu strings (%zu bytes), %zu mismatches\n", argv[2], r.strings, r.bytes, r.mismatches);
    return r.mismatches ? 1 : 0;
}
