/*
 * embed.h - a file linked into the binary with the assembler's .incbin: no
 * generated source and no objcopy step, the same in every build (CPU-only,
 * CUDA, ASan). LAYAD_EMBED(sym, "path") at file scope defines sym[] and
 * sym_end[] (a NUL byte follows the data, so a text file is also a C string);
 * the path is relative to the directory make runs in. -MMD does not see an
 * .incbin: the Makefile names the file as a prerequisite of the object.
 */
#ifndef LAYAD_EMBED_H
#define LAYAD_EMBED_H

#define LAYAD_EMBED(sym, path)                                                                       \
    __asm__(".section .rodata\n"                                                                     \
            ".global " #sym "\n"                                                                     \
            ".type " #sym ", @object\n"                                                              \
            ".balign 16\n" #sym ":\n"                                                                \
            ".incbin \"" path "\"\n"                                                                 \
            ".global " #sym "_end\n" #sym "_end:\n"                                                  \
            ".byte 0\n"                                                                              \
            ".previous\n");                                                                          \
    extern const char sym[];                                                                         \
    extern const char sym##_end[]

#endif
