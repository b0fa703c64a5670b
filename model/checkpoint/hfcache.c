/*
 * hfcache.c - resolve a --model argument offline.
 *
 * A directory is used as is. Otherwise "org/name[/subfolder...]" is looked up
 * in the Hugging Face hub cache exactly as huggingface_hub lays it out:
 * $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
 * ~/.cache/huggingface/hub; then models--org--name/refs/main holds the commit
 * hash of snapshots/<rev>/. "org/name[/subfolder]@rev" reads refs/<rev> instead
 * (a branch or tag), or takes rev as the snapshot when it is a 40-hex commit.
 * Nothing here ever touches the network.
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

/* Splits "org/name[/sub...][@rev]" (also "org/name@rev/sub...") into the id
 * without the revision (id) and the revision (rev, "main" when none). */
static int split_revision(const char *arg, char *id, size_t idlen, char *rev, size_t revlen)
{
    const char *at = strchr(arg, '@');
    if (!at) {
        snprintf(rev, revlen, "main");
        return snprintf(id, idlen, "%s", arg) >= (int)idlen ? -1 : 0;
    }
    size_t rlen = strcspn(at + 1, "/");
    if (!rlen || rlen >= revlen || strchr(at + 1 + rlen, '@'))
        return -1;
    memcpy(rev, at + 1, rlen);
    rev[rlen] = '\0';
    return snprintf(id, idlen, "%.*s%s", (int)(at - arg), arg, at + 1 + rlen) >= (int)idlen ? -1 : 0;
}

static int is_commit_hash(const char *s)
{
    size_t n = strspn(s, "0123456789abcdef");
    return n == 40 && !s[n];
}

/* The snapshot name of revision rev in repo: a 40-hex commit as is, else the
 * hash that refs/<rev> holds (a branch or tag huggingface_hub has resolved). */
static int read_revision(const char *arg, const char *repo, const char *rev, char *out, size_t outlen,
                         layad_error *err)
{
    if (is_commit_hash(rev))
        return snprintf(out, outlen, "%s", rev) >= (int)outlen ? layad_fail(err, 500, "revision too long") : 0;
    if (strstr(rev, "..") || rev[0] == '.')
        return layad_fail(err, 500, "model '%s': malformed revision '%s'", arg, rev);
    char ref[PATH_MAX + 160];
    snprintf(ref, sizeof ref, "%s/refs/%s", repo, rev);
    FILE *f = fopen(ref, "r");
    if (!f)
        return layad_fail(err, 500, "model '%s': revision '%s' is not in the Hugging Face cache (%s: %s); layad never "
                          "downloads, fetch it first (e.g. `hf download REPO --revision %s`)", arg, rev, ref,
                          strerror(errno), rev);
    size_t got = fread(out, 1, outlen - 1, f);
    fclose(f);
    out[got] = '\0';
    out[strcspn(out, " \t\r\n")] = '\0';
    if (!*out || strchr(out, '/') || strstr(out, ".."))
        return layad_fail(err, 500, "model '%s': %s does not hold a revision", arg, ref);
    return 0;
}

int checkpoint_resolve(const char *arg, char *dir, size_t dirlen, layad_error *err)
{
    if (!arg || !*arg)
        return layad_fail(err, 500, "no model given (--model DIR or org/name[/subfolder][@rev])");
    if (is_dir(arg)) {
        if (!realpath(arg, dir) && snprintf(dir, dirlen, "%s", arg) >= (int)dirlen)
            return layad_fail(err, 500, "model path too long");
        return 0;
    }
    char id[PATH_MAX], want[128];
    if (split_revision(arg, id, sizeof id, want, sizeof want))
        return layad_fail(err, 500, "model '%s': malformed revision (org/name[/subfolder][@rev])", arg);
    /* org/name[/subfolder...]: exactly two leading components name the repo. */
    const char *slash1 = strchr(id, '/');
    if (!slash1 || slash1 == id || id[0] == '.' || id[0] == '/')
        return layad_fail(err, 500, "model '%s': no such directory, and not an org/name hub id", arg);
    const char *slash2 = strchr(slash1 + 1, '/');
    size_t org_len = (size_t)(slash1 - id);
    size_t name_len = slash2 ? (size_t)(slash2 - slash1 - 1) : strlen(slash1 + 1);
    const char *sub = slash2 ? slash2 + 1 : "";
    if (!name_len || strstr(id, ".."))
        return layad_fail(err, 500, "model '%s': malformed hub id", arg);
    char root[PATH_MAX], repo[PATH_MAX], rev[128];
    if (cache_root(root, sizeof root))
        return layad_fail(err, 500, "model '%s': cannot locate the Hugging Face cache (set HF_HUB_CACHE or HF_HOME)",
                          arg);
    if (snprintf(repo, sizeof repo, "%s/models--%.*s--%.*s", root, (int)org_len, id, (int)name_len,
                 slash1 + 1) >= (int)sizeof repo)
        return layad_fail(err, 500, "model '%s': path too long", arg);
    if (!is_dir(repo))
        return layad_fail(err, 500, "model '%s': not in the Hugging Face cache (%s is missing); layad never downloads, "
                          "fetch it first (e.g. `hf download %.*s/%.*s`)", arg, repo, (int)org_len, id,
                          (int)name_len, slash1 + 1);
    if (read_revision(arg, repo, want, rev, sizeof rev, err))
        return -1;
    int w = snprintf(dir, dirlen, "%s/snapshots/%s%s%s", repo, rev, *sub ? "/" : "", sub);
    if (w < 0 || (size_t)w >= dirlen)
        return layad_fail(err, 500, "model '%s': path too long", arg);
    if (!is_dir(dir))
        return layad_fail(err, 500, "model '%s': snapshot directory %s is missing", arg, dir);
    return 0;
}
