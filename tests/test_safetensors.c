/*
 * test_safetensors.c - the reader accepts valid files and refuses every malformed one
 * with an error naming the file and the tensor, never crashing or reading out of bounds
 * (this suite also runs under ASan+UBSan).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/checkpoint/safetensors.h"
#include "tests/lib/testutil.h"

/* Builds header-length + header + data into a fresh buffer. */
static uint8_t *blob(const char *header, size_t data_len, size_t *size)
{
    size_t hl = strlen(header);
    *size = 8 + hl + data_len;
    uint8_t *b = malloc(*size);
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, header, hl);
    for (size_t i = 0; i < data_len; i++)
        b[8 + hl + i] = (uint8_t)(i * 7);
    return b;
}

static int open_blob(const char *header, size_t data_len, layad_error *err, safetensors *st)
{
    size_t size;
    uint8_t *b = blob(header, data_len, &size);
    int rc = st_open_mem(st, b, size, "t.safetensors", err);
    if (rc == 0)
        st_close(st);
    free(b);
    return rc;
}

static void expect_error(const char *header, size_t data_len, const char *needle)
{
    layad_error err = {0};
    safetensors st;
    ck_assert_int_eq(open_blob(header, data_len, &err, &st), -1);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "error '%s' lacks '%s'", err.msg, needle);
    ck_assert_msg(strstr(err.msg, "t.safetensors") != NULL, "error '%s' does not name the file", err.msg);
}

START_TEST(valid_file)
{
    const char *h = "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]},"
                    "\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}";
    size_t size;
    uint8_t *b = blob(h, 12, &size);
    safetensors st;
    layad_error err = {0};
    ck_assert_int_eq(st_open_mem(&st, b, size, "t.safetensors", &err), 0);
    ck_assert_int_eq(st.count, 2);
    const st_tensor *a = st_find(&st, "a"), *bb = st_find(&st, "b");
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(bb);
    ck_assert_ptr_null(st_find(&st, "c"));
    ck_assert_int_eq(a->dtype, ST_F16);
    ck_assert_int_eq(bb->numel, 2);
    ck_assert_ptr_eq(bb->data, b + 8 + strlen(h) + 4);
    st_close(&st);
    free(b);
}
END_TEST

START_TEST(malformed_files)
{
    expect_error("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}", 4, "not valid JSON");
    expect_error("[1,2]", 0, "not a JSON object");
    expect_error("{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, "unsupported dtype 'I64'");
    expect_error("{\"a\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,4]}}", 4, "tensor 'a'");
    expect_error("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,40]}}", 4, "outside the data area");
    expect_error("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[4,0]}}", 4, "outside the data area");
    expect_error("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[-4,0]}}", 4, "outside the data area");
    expect_error("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                 "\"b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[2,6]}}", 6, "overlaps");
    expect_error("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                 "\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[4,8]}}", 8, "not valid JSON"); /* duplicate */
    expect_error("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[2,6]}}", 6, "gap");
    expect_error("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 9, "trailing");
    expect_error("{\"a\":{\"dtype\":\"F16\",\"shape\":[-2],\"data_offsets\":[0,4]}}", 4, "bad shape");
    expect_error("{\"a\":{\"dtype\":\"F16\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,2]}}", 2, "shape");
    expect_error("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0]}}", 4, "data_offsets");
    expect_error("{\"a\":{\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "missing dtype");
    expect_error("{\"a\":{\"dtype\":\"F16\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,4]}}", 4,
                 "tensor 'a'");
}
END_TEST

START_TEST(header_bounds)
{
    layad_error err = {0};
    safetensors st;
    uint8_t tiny[5] = {1, 2, 3, 4, 5};
    ck_assert_int_eq(st_open_mem(&st, tiny, sizeof tiny, "t.safetensors", &err), -1);
    ck_assert(strstr(err.msg, "too short") != NULL);
    /* header length pointing past the end of the file */
    size_t size;
    uint8_t *b = blob("{}", 0, &size);
    b[0] = 200;
    ck_assert_int_eq(st_open_mem(&st, b, size, "t.safetensors", &err), -1);
    ck_assert(strstr(err.msg, "exceeds the file") != NULL);
    b[0] = 0xff, b[7] = 0xff; /* absurd u64 */
    ck_assert_int_eq(st_open_mem(&st, b, size, "t.safetensors", &err), -1);
    free(b);
}
END_TEST

/* Every truncation of a valid file is refused cleanly (no crash, no OOB under ASan). */
START_TEST(truncated_files)
{
    const char *h = "{\"a\":{\"dtype\":\"BF16\",\"shape\":[3,2],\"data_offsets\":[0,12]}}";
    size_t size;
    uint8_t *b = blob(h, 12, &size);
    for (size_t n = 0; n < size; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, b, n);
        safetensors st;
        layad_error err = {0};
        ck_assert_int_eq(st_open_mem(&st, cut, n, "t.safetensors", &err), -1);
        ck_assert(err.msg[0] != '\0');
        free(cut);
    }
    free(b);
}
END_TEST

START_TEST(file_errors)
{
    layad_error err = {0};
    safetensors st;
    ck_assert_int_eq(st_open(&st, "/nonexistent/model.safetensors", &err), -1);
    ck_assert(strstr(err.msg, "/nonexistent/model.safetensors") != NULL);
    char path[] = "/tmp/layad-st-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "\x02\0\0\0\0\0\0\0{}", 10), 10);
    close(fd);
    ck_assert_int_eq(st_open(&st, path, &err), 0);
    ck_assert_int_eq(st.count, 0);
    st_close(&st);
    unlink(path);
}
END_TEST

START_TEST(half_conversions)
{
    /* every f16 bit pattern survives f16 -> f32 -> f16 (NaN payloads stay NaN) */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = st_f16_to_f32((uint16_t)h);
        uint16_t back = st_f32_to_f16(f);
        if (isnan(f))
            ck_assert(isnan(st_f16_to_f32(back)));
        else
            ck_assert_uint_eq(back, h);
    }
    ck_assert(st_f16_to_f32(0x3c00) == 1.0f);
    ck_assert(st_f16_to_f32(0x0001) == 5.9604644775390625e-8f);
    ck_assert_uint_eq(st_f32_to_f16(65520.0f), 0x7c00);     /* rounds to inf */
    ck_assert_uint_eq(st_f32_to_f16(65519.0f), 0x7bff);
    ck_assert_uint_eq(st_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00); /* tie -> even */
    ck_assert_uint_eq(st_f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);
    ck_assert(st_bf16_to_f32(0x3f80) == 1.0f);
    ck_assert_uint_eq(st_f32_to_bf16(1.00390625f), 0x3f80);      /* tie -> even */
    ck_assert_uint_eq(st_f32_to_bf16(1.01171875f), 0x3f82);
    for (uint32_t h = 0; h < 65536; h += 7) {
        float f = st_bf16_to_f32((uint16_t)h);
        if (!isnan(f))
            ck_assert_uint_eq(st_f32_to_bf16(f), h);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("safetensors");
    TCase *tc = tcase_create("reader");
    tcase_add_test(tc, valid_file);
    tcase_add_test(tc, malformed_files);
    tcase_add_test(tc, header_bounds);
    tcase_add_test(tc, truncated_files);
    tcase_add_test(tc, file_errors);
    tcase_add_test(tc, half_conversions);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
