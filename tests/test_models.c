/*
 * test_models.c - which served model a request's "model" names (the
 * served-model table, server/api/models.c) and how the repeatable `model` /
 * `model_aliases` options add up across the config file, the environment
 * and flags (server/daemon/config.c). No checkpoint is opened: the table
 * only carries pointers.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/api/models.h"
#include "server/daemon/config.h"
#include "tests/lib/testutil.h"

static laya_checkpoint CK[3];

static int find(const model_table *t, const char *s)
{
    return model_table_find(t, s, strlen(s));
}

START_TEST(router_names_resolve)
{
    model_table t = {0};
    ck_assert_int_eq(model_table_add(&t, "multilingual", &CK[0]), 0);
    ck_assert_int_eq(model_table_add(&t, "english", &CK[1]), 1);
    ck_assert_int_eq(model_table_add(&t, "papers", &CK[2]), 2);
    /* served names and the official router's aliases, trimmed, any case */
    ck_assert_int_eq(find(&t, "english"), 1);
    ck_assert_int_eq(find(&t, " English "), 1);
    ck_assert_int_eq(find(&t, "en"), 1);
    ck_assert_int_eq(find(&t, "laya"), 1); /* the router's alias of english, not the default */
    ck_assert_int_eq(find(&t, "default"), 1);
    ck_assert_int_eq(find(&t, "ML"), 0);
    ck_assert_int_eq(find(&t, "laya-multilingual"), 0);
    ck_assert_int_eq(find(&t, "convaiinnovations/laya-multilingual"), 0);
    ck_assert_int_eq(find(&t, "papers"), 2);
    /* "let the server pick" names and the family tag go to the first entry */
    ck_assert_int_eq(find(&t, "jev-latest"), 0);
    ck_assert_int_eq(find(&t, "convaiinnovations/laya"), 0);
    ck_assert_int_eq(find(&t, "laya-rl-agent"), 0);
    /* a checkpoint the table does not serve, or nothing at all */
    ck_assert_int_eq(find(&t, "typed-decisions"), -1);
    ck_assert_int_eq(find(&t, "typed"), -1);
    ck_assert_int_eq(find(&t, "gpt-9"), -1);
    ck_assert_int_eq(find(&t, "   "), -1);
    ck_assert_int_eq(model_table_find(&t, "englishX", 7), 1); /* length-bounded, not NUL-terminated */
    /* explicit aliases: added once, refused when they name another model */
    ck_assert_int_eq(model_table_alias(&t, 2, "Arxiv"), 0);
    ck_assert_int_eq(model_table_alias(&t, 2, "arxiv"), 0);
    ck_assert_int_eq(t.m[2].n_alias, 1);
    ck_assert_int_eq(find(&t, "ARXIV"), 2);
    ck_assert_int_eq(model_table_alias(&t, 2, "en"), -1);
    ck_assert_int_eq(model_table_alias(&t, 2, "english"), -1);
    /* a name taken already (as a name or as an alias) cannot name a new entry */
    ck_assert_int_eq(model_table_add(&t, "ENGLISH", &CK[2]), -1);
    ck_assert_int_eq(model_table_add(&t, "ml", &CK[2]), -1);
    ck_assert_int_eq(model_table_add(&t, "", &CK[2]), -1);
}
END_TEST

START_TEST(default_names_without_english)
{
    model_table t = {0};
    ck_assert_int_eq(model_table_add(&t, "laya-rl-agent", &CK[0]), 0);
    ck_assert_int_eq(model_table_alias(&t, 0, "rl-agent"), 0);
    ck_assert_int_eq(find(&t, "laya"), 0);
    ck_assert_int_eq(find(&t, "default"), 0);
    ck_assert_int_eq(find(&t, "rl-agent"), 0);
    ck_assert_int_eq(find(&t, "english"), -1);
    /* an explicit alias given earlier keeps its model when a router name's owner arrives later */
    model_table u = {0};
    ck_assert_int_eq(model_table_add(&u, "stable", &CK[0]), 0);
    ck_assert_int_eq(model_table_alias(&u, 0, "en"), 0);
    ck_assert_int_eq(model_table_add(&u, "english", &CK[1]), 1);
    ck_assert_int_eq(find(&u, "en"), 0);
    ck_assert_int_eq(find(&u, "laya"), 1);
    /* a checkpoint served as laya-rl-agent but known to be the English one */
    model_table w = {0};
    ck_assert_int_eq(model_table_add(&w, "laya-rl-agent", &CK[0]), 0);
    ck_assert_int_eq(model_table_add(&w, "ml-entry", &CK[1]), 1);
    ck_assert_int_eq(model_table_alias(&w, 1, "en"), 0);
    ck_assert_int_eq(model_table_adopt(&w, 0, "english"), 0);
    ck_assert_int_eq(find(&w, "English"), 0);
    ck_assert_int_eq(find(&w, "laya"), 0);
    ck_assert_int_eq(find(&w, "en"), 1); /* taken before: kept */
    ck_assert_int_eq(model_table_adopt(&w, 0, "papers"), -1);
    /* the table holds MODELS_MAX entries */
    model_table v = {0};
    char nm[32];
    for (int i = 0; i < MODELS_MAX; i++) {
        snprintf(nm, sizeof nm, "m%d", i);
        ck_assert_int_eq(model_table_add(&v, nm, &CK[0]), i);
    }
    ck_assert_int_eq(model_table_add(&v, "one-more", &CK[0]), -1);
}
END_TEST

/* `model` entries: lines of a file add up, the environment (space-separated)
 * replaces the file's, flags replace both and add up among themselves. */
START_TEST(model_entries_repeat_by_source)
{
    char path[128];
    snprintf(path, sizeof path, "/tmp/layad-models-conf-%d", (int)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "model = english=/srv/en\nmodel = multilingual=org/mm@v2\nmodel_aliases = multilingual=intl,i18n\n");
    fclose(f);
    serve_config *c = calloc(1, sizeof *c);
    ck_assert_ptr_nonnull(c);
    layad_error err;
    unsetenv("LAYAD_MODEL");
    char *argv1[] = {"serve", "--config", path, NULL};
    ck_assert_int_eq(serve_config_load(c, 3, argv1, &err), 0);
    ck_assert_int_eq(c->model.n, 2);
    ck_assert_str_eq(c->model.item[0], "english=/srv/en");
    ck_assert_str_eq(c->model.item[1], "multilingual=org/mm@v2");
    ck_assert_int_eq(c->model_aliases.n, 1);
    setenv("LAYAD_MODEL", " a=/x   b=/y ", 1);
    ck_assert_int_eq(serve_config_load(c, 3, argv1, &err), 0);
    ck_assert_int_eq(c->model.n, 2);
    ck_assert_str_eq(c->model.item[0], "a=/x");
    ck_assert_str_eq(c->model.item[1], "b=/y");
    char *argv2[] = {"serve", "--config", path, "--model", "/one", "--model=two=/two", NULL};
    ck_assert_int_eq(serve_config_load(c, 6, argv2, &err), 0);
    ck_assert_int_eq(c->model.n, 2);
    ck_assert_str_eq(c->model.item[0], "/one");
    ck_assert_str_eq(c->model.item[1], "two=/two");
    unsetenv("LAYAD_MODEL");
    char *argv3[] = {"serve", "--model", "1", "--model", "2", "--model", "3", "--model", "4", "--model", "5",
                     "--model", "6", "--model", "7", "--model", "8", "--model", "9", NULL};
    ck_assert_int_eq(serve_config_load(c, 19, argv3, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "at most"));
    serve_config_defaults(c);
    ck_assert_int_eq(c->model.n, 0);
    ck_assert_int_eq(c->model_aliases.n, 0);
    free(c);
    unlink(path);
}
END_TEST

Suite *suite(void)
{
    Suite *s = suite_create("models");
    TCase *tc = tcase_create("models");
    tcase_add_test(tc, router_names_resolve);
    tcase_add_test(tc, default_names_without_english);
    tcase_add_test(tc, model_entries_repeat_by_source);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
