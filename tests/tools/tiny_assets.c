/*
 * tiny_assets.c - files embedded in the binary for the default tiny model.
 *
 * The tiny checkpoint's tokenizer (config/tiny-tokenizer.json, trained once by
 * scripts/mk-tiny-tokenizer) is linked in with .incbin so that `layad-dev mkmodel
 * --preset tiny` works offline from the binary alone.
 */
#include <stddef.h>

__asm__(".section .rodata\n"
        ".global layad_tiny_tokenizer_json\n"
        ".type layad_tiny_tokenizer_json, @object\n"
        ".balign 16\n"
        "layad_tiny_tokenizer_json:\n"
        ".incbin \"config/tiny-tokenizer.json\"\n"
        ".global layad_tiny_tokenizer_json_end\n"
        "layad_tiny_tokenizer_json_end:\n"
        ".byte 0\n"
        ".previous\n");
