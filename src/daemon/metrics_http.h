/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics_http.h — the daemon's HTTP endpoint (libmicrohttpd, one thread of
 * its own): GET /metrics answers with what the fill callback renders, GET /
 * with a page pointing there; anything else is 404, a method other than
 * GET or HEAD is 405. It binds exactly the address it is given.
 */
#ifndef GP_DAEMON_METRICS_HTTP_H
#define GP_DAEMON_METRICS_HTTP_H

#include <stddef.h>

/* The content type of the text exposition format. */
#define GP_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/*
 * Called on the server's thread for each GET /metrics: fills *body with a
 * malloc'ed page of *len bytes (the server frees it). 0, or -errno: the
 * client gets 503.
 */
typedef int (*gp_metrics_fill_fn)(void *ctx, char **body, size_t *len);

struct gp_metrics_server;

/*
 * Listens on addr (a numeric IPv4 or IPv6 literal; "0.0.0.0" or "::" for
 * every address) and port (0: the kernel picks one, see
 * gp_metrics_server_port). NULL, with errno set, after one gp_err message
 * naming addr:port and the cause (e.g. "Address already in use").
 */
struct gp_metrics_server *gp_metrics_server_start(const char *addr, unsigned port,
						  gp_metrics_fill_fn fill, void *ctx);
/* The port it listens on. */
unsigned gp_metrics_server_port(const struct gp_metrics_server *s);
/* Stops serving, closes the socket and joins the server's thread. NULL is a no-op. */
void gp_metrics_server_stop(struct gp_metrics_server *s);

#endif /* GP_DAEMON_METRICS_HTTP_H */
