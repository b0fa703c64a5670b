/*
 * head.c - checks on a request head, before any body is read (see
 * http_internal.h): the framing rules libmicrohttpd lets through, the bearer
 * key (compared in constant time), the client's X-Request-Id, and whether the
 * peer is on loopback.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "server/http/http.h"
#include "server/http/http_internal.h"

int http_key_equal(const char *given, size_t given_len, const char *key, size_t key_len)
{
    /* Runs over the full configured length whatever the input; the only thing
     * the timing reveals is that a key of some length is configured. */
    unsigned char diff = (unsigned char)(given_len != key_len);
    for (size_t i = 0; i < key_len; i++) {
        unsigned char g = i < given_len ? (unsigned char)given[i] : 0;
        diff |= (unsigned char)(g ^ (unsigned char)key[i]);
    }
    return diff == 0;
}

int http_rid_ok(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (n >= 64 || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                         c == '-' || c == '_' || c == '.' || c == ':'))
            return 0;
    }
    return n > 0;
}

int http_peer_is_loopback(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return 0;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
            return 1;
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
            return in6->sin6_addr.s6_addr[12] == 127;
    }
    return 0;
}

int http_auth_ok(const serve_app *app, struct MHD_Connection *c)
{
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7))
        return 0;
    h += 7;
    while (*h == ' ')
        h++;
    size_t n = strlen(h);
    while (n && h[n - 1] == ' ')
        n--;
    return http_key_equal(h, n, app->key, app->key_len);
}

typedef struct header_counts {
    int host, content_length, transfer_encoding;
} header_counts;

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    (void)value;
    header_counts *n = cls;
    n->host += !strcasecmp(key, MHD_HTTP_HEADER_HOST);
    n->content_length += !strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH);
    n->transfer_encoding += !strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    return MHD_YES;
}

/* RFC 9112's framing rules that libmicrohttpd 0.9.75 lets through: NULL when
 * the head is sound, else the 400 message. A request with Content-Length and
 * Transfer-Encoding, or several Content-Lengths, is where request smuggling
 * starts (a proxy and we would disagree on where the body ends): the
 * connection is closed after the 400, since the next bytes on it cannot be
 * trusted to start a request. HTTP/1.1 wants exactly one Host. */
const char *http_framing_error(struct MHD_Connection *c, const char *version, int *close_after)
{
    header_counts n = {0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &n);
    *close_after = n.transfer_encoding > 0 && n.content_length > 0;
    if (*close_after)
        return "Content-Length and Transfer-Encoding together";
    *close_after = n.content_length > 1;
    if (*close_after)
        return "more than one Content-Length";
    if (!strcmp(version, MHD_HTTP_VERSION_1_1) && n.host != 1)
        return n.host ? "more than one Host header" : "HTTP/1.1 request without a Host header";
    return NULL;
}
