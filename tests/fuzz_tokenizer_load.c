/*
 * fuzz_tokenizer_load.c - libFuzzer target: arbitrary bytes as a tokenizer.json.
 *
 * tokenizer_load_mem must either fail cleanly (status 500 and a message) or
 * return a tokenizer that encodes a few fixed texts (plain, Unicode, added-token
 * look-alikes, invalid UTF-8) to ids inside its vocabulary and frees without a
 * leak. Seeds and a dictionary come from scripts/tokenizer-fuzz. Run from the
 * repository root:
 *   make fuzz && build/fuzz/fuzz_tokenizer_load -max_len=65536 -dict=tests/fuzz_tokenizer_load.dict DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer/tokenizer.h"

/* UBSan findings abort (the sanitizer's own default is to report and continue, which
 * libFuzzer does not count as a crash; see tests/fuzz_request.c). */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
    return "halt_on_error=1:print_stacktrace=1";
}

static const char *const texts[] = {
    "Hello world, it's 2026!", "  spaces\t\tand\nnewlines  ", "caf\xC3\xA9 e\xCC\x81 \xE6\x97\xA5\xE6\x9C\xAC",
    "[MASK] <mask> |||IP_ADDRESS||| <pad>", "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB", "",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    layad_error err;
    tokenizer *t = tokenizer_load_mem((const char *)data, size, "fuzz.json", &err);
    if (!t) {
        if (err.status != 500 || err.msg[0] == '\0')
            abort();
        return 0;
    }
    tok_ids ids = { 0 };
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        ids.n = 0;
        int rc = tokenizer_encode(t, texts[k], strlen(texts[k]), &ids, &err);
        /* a loaded file may still fail at encode time only where HF does too: an
         * unk_token missing from the vocabulary */
        if (rc != 0 && (err.status != 500 || !strstr(err.msg, "unk")))
            abort();
        for (size_t i = 0; rc == 0 && i < ids.n; i++)
            if (ids.ids[i] < 0 || (size_t)ids.ids[i] >= tokenizer_vocab_size(t))
                abort();
    }
    ids.n = 0;
    if (tokenizer_encode(t, "\xC3", 1, &ids, &err) != -1 || err.status != 400 || ids.n != 0)
        abort();
    free(ids.ids);
    tokenizer_free(t);
    return 0;
}
