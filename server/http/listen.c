/*
 * listen.c - the HTTP front's listening socket (see http_internal.h), bound
 * here and handed to libmicrohttpd.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/http/http_internal.h"

/* The listening socket on cfg->bind:cfg->port, or -1 with err set. Bound here
 * rather than by MHD for the exact reason of a failure ("in use" names the
 * way out) and for SO_REUSEPORT only when asked: with it, a second daemon
 * would start on the same port and take half of the connections. *ipv6 is
 * set for an IPv6 address. */
int http_open_listener(const serve_config *cfg, int *ipv6, layad_error *err)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof ss);
    *ipv6 = strchr(cfg->bind, ':') != NULL;
    if (*ipv6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)cfg->port);
        sl = sizeof *a;
        if (inet_pton(AF_INET6, cfg->bind, &a->sin6_addr) != 1)
            return layad_fail(err, 500, "bind: '%s' is not an IP address literal", cfg->bind);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)cfg->port);
        sl = sizeof *a;
        if (inet_pton(AF_INET, cfg->bind, &a->sin_addr) != 1)
            return layad_fail(err, 500, "bind: '%s' is not an IP address literal", cfg->bind);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return layad_fail(err, 500, "socket: %s", strerror(errno));
    int one = 1;
    /* SO_REUSEADDR: restart over old connections in TIME_WAIT; on Linux it
     * never lets two sockets listen on one port. */
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        (cfg->reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one)) ||
        (*ipv6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one))) {
        layad_fail(err, 500, "setsockopt on the listening socket: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, SOMAXCONN)) {
        int e = errno;
        if (e == EADDRINUSE)
            layad_fail(err, 500, "cannot listen on %s:%d: address already in use (another layad?%s)", cfg->bind,
                       cfg->port, cfg->reuse_port ? " reuse_port is set, but the other socket does not allow sharing"
                                                  : " set reuse_port = true to share the port on purpose");
        else
            layad_fail(err, 500, "cannot listen on %s:%d: %s", cfg->bind, cfg->port, strerror(e));
        close(fd);
        return -1;
    }
    return fd;
}
