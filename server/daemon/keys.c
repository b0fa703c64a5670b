/*
 * keys.c - the bearer key `layad serve` checks requests against (see keys.h).
 *
 * The key comes from api_key_file (its first line) or api_key (the file's
 * wins). Either is refused at start-up when no client could present it: a
 * control byte, or a space at either end (a header value is trimmed), or,
 * for the file, a first line longer than SERVE_KEY_MAX (cutting it would let
 * its prefix in). A key on the command line is readable by every local user
 * in ps and /proc, so it is blanked and warned about.
 */
#include "server/daemon/keys.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/telemetry/log.h"

/* 0 when key (n bytes) can match a presented bearer key: the header's value
 * is trimmed of spaces and cannot carry control bytes. */
static int key_usable(const char *key, size_t n, const char *src, layad_error *err)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)key[i] < 0x20 || key[i] == 0x7f)
            return layad_fail(err, 500, "%s: the key contains a control byte (at byte %zu)", src, i);
    if (key[0] == ' ' || key[n - 1] == ' ')
        return layad_fail(err, 500, "%s: the key starts or ends with a space, which no client can send", src);
    return 0;
}

/* The first line of path (without its line end) into out[SERVE_KEY_MAX + 1].
 * Refuses an empty first line and one over SERVE_KEY_MAX bytes (never cuts a
 * key: a cut key would let its prefix in). Warns when every user can read the file. */
static int read_key_file(const char *path, char *out, layad_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return layad_fail(err, 500, "api_key_file %s: cannot open (%s)", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) == 0 && (sb.st_mode & S_IROTH))
        log_msg("warn", "api_key_file %s is readable by every user (mode %04o): make it readable by the daemon's "
                "user only (chmod 600)", path, (unsigned)(sb.st_mode & 07777));
    char buf[SERVE_KEY_MAX + 2]; /* the longest key and its "\r\n" */
    size_t n = 0;
    while (n < sizeof buf) {
        ssize_t k = read(fd, buf + n, sizeof buf - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            close(fd);
            return layad_fail(err, 500, "api_key_file %s: cannot read (%s)", path, strerror(errno));
        }
        if (k == 0)
            break;
        n += (size_t)k;
    }
    close(fd);
    size_t len = 0;
    while (len < n && buf[len] != '\n')
        len++;
    int ended = len < n;
    if (len && buf[len - 1] == '\r')
        len--;
    if (len > SERVE_KEY_MAX || (!ended && n == sizeof buf))
        return layad_fail(err, 500, "api_key_file %s: the key is longer than %d bytes", path, SERVE_KEY_MAX);
    if (!len)
        return layad_fail(err, 500, "api_key_file %s: empty first line", path);
    memcpy(out, buf, len);
    out[len] = 0;
    char src[SERVE_STR_MAX + 16];
    snprintf(src, sizeof src, "api_key_file %s", path);
    return key_usable(out, len, src, err);
}

/* 1 for a loopback literal (127.0.0.0/8, ::1, ::ffff:127.x.y.z) or one that
 * is no address at all (http_start reports that); 0 otherwise. */
static int bind_is_loopback(const char *bind)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, bind, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, bind, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
    return 1;
}

/* 1 (--api-key VALUE) or 2 (--api-key=VALUE) for the flag that puts the key on the command line. */
static int api_key_flag(const char *a)
{
    if (strncmp(a, "--api", 5) || (a[5] != '-' && a[5] != '_') || strncmp(a + 6, "key", 3))
        return 0;
    return a[9] == 0 ? 1 : a[9] == '=' ? 2 : 0;
}

int keys_resolve(serve_app *app, const serve_config *cfg, int argc, char **argv, layad_error *err)
{
    for (int i = 1; i < argc; i++) {
        int kind = api_key_flag(argv[i]);
        char *v = kind == 2 ? strchr(argv[i], '=') + 1 : kind == 1 && i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            continue;
        log_msg("warn", "--api-key on the command line: every local user can read it in ps and /proc while the "
                "process starts (blanked now); use api_key_file or LAYAD_API_KEY");
        memset(v, 'x', strlen(v));
    }
    if (cfg->api_key_file[0] && read_key_file(cfg->api_key_file, app->key, err))
        return -1;
    if (!app->key[0] && cfg->api_key[0]) {
        if (key_usable(cfg->api_key, strlen(cfg->api_key), "api_key", err))
            return -1;
        snprintf(app->key, sizeof app->key, "%s", cfg->api_key);
    }
    app->key_len = strlen(app->key);
    if (app->key_len || bind_is_loopback(cfg->bind))
        return 0;
    if (!cfg->allow_unauthenticated_remote)
        return layad_fail(err, 500, "bind %s is not a loopback address and no bearer key is set: anyone who can "
                          "reach it could use the model and /drain. Set api_key_file, or "
                          "allow_unauthenticated_remote = true to serve it so on purpose", cfg->bind);
    log_msg("warn", "serving %s without a bearer key (allow_unauthenticated_remote = true)", cfg->bind);
    return 0;
}
