/*
 * hfcache.c - resolve a --model argument offline.
 *
 * A directory is used as is. Otherwise "org/name[/subfolder...]" is looked up
 * in the Hugging Face hub cache exactly as huggingface_hub lays it out:
 * $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
 * ~/.cache/huggingface/hub; then models--org--name/refs/main holds the commit
 * hash of snapshots/<rev>/. Nothing here ever touches the network.
 */
#include "model/checkpoint/checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int cache_root(char *out, size_t n)
{
    const char *v;
    int w;
    if ((v = getenv("HF_HUB_CACHE")) && *v)
        w = snprintf(out, n, "%s", v);
    else if ((v = getenv("HF_HOME")) && *v)
        w = snprintf(out, n, "%s/hub", v);
    else if ((v = getenv("XDG_CACHE_HOME")) && *v)
        w = snprintf(out, n, "%s/huggingface/hub", v);
    else if ((v = getenv("HOME")) && *v)
        w = snprintf(out, n, "%s/.cache/huggingface/hub", v);
    else
        return -1;
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

int checkpoint_resolve(const char *arg, char *dir, size_t dirlen, layad_error *err)
{
    if (!arg || !*arg)
        return layad_fail(err, 500, "no model given (--model DIR or org/name[/subfolder])");
    if (is_dir(arg)) {
        if (!realpath(arg, dir) && snprintf(dir, dirlen, "%s", arg) >= (int)dirlen)
            return layad_fail(err, 500, "model path too long");
        return 0;
    }
    /* org/name[/subfolder...]: exactly two leading components name the repo. */
    const char *slash1 = strchr(arg, '/');
    if (!slash1 || slash1 == arg || arg[0] == '.' || arg[0] == '/')
        return layad_fail(err, 500, "model '%s': no such directory, and not an org/name hub id", arg);
    const char *slash2 = strchr(slash1 + 1, '/');
    size_t org_len = (size_t)(slash1 - arg);
    size_t name_len = slash2 ? (size_t)(slash2 - slash1 - 1) : strlen(slash1 + 1);
    const char *sub = slash2 ? slash2 + 1 : "";
    if (!name_len || strstr(arg, ".."))
        return layad_fail(err, 500, "model '%s': malformed hub id", arg);
    char root[PATH_MAX], repo[PATH_MAX], ref[PATH_MAX + 32], rev[128];
    if (cache_root(root, sizeof root))
        return layad_fail(err, 500, "model '%s': cannot locate the Hugging Face cache (set HF_HUB_CACHE or HF_HOME)",
                          arg);
    if (snprintf(repo, sizeof repo, "%s/models--%.*s--%.*s", root, (int)org_len, arg, (int)name_len,
                 slash1 + 1) >= (int)sizeof repo)
        return layad_fail(err, 500, "model '%s': path too long", arg);
    snprintf(ref, sizeof ref, "%s/refs/main", repo);
    FILE *f = fopen(ref, "r");
    if (!f)
        return layad_fail(err, 500, "model '%s': not in the Hugging Face cache (%s: %s); layad never downloads, "
                          "fetch it first (e.g. `hf download %.*s/%.*s`)", arg, ref, strerror(errno),
                          (int)org_len, arg, (int)name_len, slash1 + 1);
    size_t got = fread(rev, 1, sizeof rev - 1, f);
    fclose(f);
    rev[got] = '\0';
    rev[strcspn(rev, " \t\r\n")] = '\0';
    if (!*rev || strchr(rev, '/') || strstr(rev, ".."))
        return layad_fail(err, 500, "model '%s': %s does not hold a revision", arg, ref);
    int w = snprintf(dir, dirlen, "%s/snapshots/%s%s%s", repo, rev, *sub ? "/" : "", sub);
    if (w < 0 || (size_t)w >= dirlen)
        return layad_fail(err, 500, "model '%s': path too long", arg);
    if (!is_dir(dir))
        return layad_fail(err, 500, "model '%s': snapshot directory %s is missing", arg, dir);
    return 0;
}
