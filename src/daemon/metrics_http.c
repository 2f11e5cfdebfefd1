/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics_http.c — the /metrics endpoint on libmicrohttpd's own polling
 * thread. We open and bind the listening socket ourselves and hand it to
 * MHD: that way the address is exactly the one configured, and a failure
 * (address in use, not an address of this host) is one message with the
 * real errno instead of MHD's guesses. Small connection limit and timeout:
 * a scraper needs one connection, and a stuck client must not hold one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "daemon/metrics_http.h"
#include "log.h"

#define CONNECTION_LIMIT     16
#define CONNECTION_TIMEOUT_S 10

struct gp_metrics_server {
	struct MHD_Daemon *mhd;
	gp_metrics_fill_fn fill;
	void *ctx;
	unsigned port;
};

static const char index_page[] =
	"<html><head><title>gpuprobed</title></head><body>\n"
	"<h1>gpuprobed</h1>\n<p><a href=\"/metrics\">Metrics</a></p>\n</body></html>\n";

/* MHD's own complaints (a connection it could not accept, ...): warnings, one line each. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	gp_warn("metrics endpoint: %s", buf);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
			     void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	return reply(c, status, "text/plain; charset=utf-8", (void *)text, strlen(text),
		     MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct gp_metrics_server *s = cls;
	char *body = NULL;
	size_t len = 0;
	int err;

	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: use GET\n");
	if (!strcmp(url, "/"))
		return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", (void *)index_page,
			     sizeof(index_page) - 1, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics"))
		return reply_text(c, MHD_HTTP_NOT_FOUND,
				  "not found: the metrics are at /metrics\n");
	err = s->fill(s->ctx, &body, &len);
	if (err) {
		free(body);
		gp_warn("metrics endpoint: rendering the metrics failed: %s", strerror(-err));
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "metrics unavailable\n");
	}
	return reply(c, MHD_HTTP_OK, GP_METRICS_CONTENT_TYPE, body, len, MHD_RESPMEM_MUST_FREE);
}

/* A socket listening on exactly addr:port; -errno. */
static int listen_on(const char *addr, unsigned port, unsigned *bound_port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	socklen_t sl;
	int fd, one = 1, err;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((unsigned short)port);
		sl = sizeof(*in4);
	} else if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((unsigned short)port);
		sl = sizeof(*in6);
	} else {
		return -EINVAL;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* a restart may bind while old connections linger in TIME_WAIT; a live listener still wins */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* "::" means the IPv6 addresses only, as written */
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, 64))
		goto fail;
	sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl))
		goto fail;
	*bound_port = ntohs(ss.ss_family == AF_INET ? in4->sin_port : in6->sin6_port);
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

struct gp_metrics_server *gp_metrics_server_start(const char *addr, unsigned port,
						  gp_metrics_fill_fn fill, void *ctx)
{
	struct gp_metrics_server *s = NULL;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	int fd = -EINVAL, err;

	if (!addr || port > 65535 || !fill) {
		err = EINVAL;
		gp_err("metrics endpoint %s:%u: %s", addr ? addr : "(none)", port, strerror(err));
		goto fail;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		err = ENOMEM;
		gp_err("metrics endpoint %s:%u: %s", addr, port, strerror(err));
		goto fail;
	}
	s->fill = fill;
	s->ctx = ctx;
	fd = listen_on(addr, port, &s->port);
	if (fd < 0) {
		err = -fd;
		gp_err("metrics endpoint %s:%u: %s", addr, port,
		       err == EINVAL ? "not a numeric IPv4 or IPv6 address" : strerror(err));
		goto fail;
	}
	if (MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES)
		flags |= MHD_USE_EPOLL;
	s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER,
				  mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTION_LIMIT,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S,
				  MHD_OPTION_END);
	if (!s->mhd) {
		err = errno ? errno : EIO;
		close(fd);
		gp_err("metrics endpoint %s:%u: the HTTP server did not start: %s", addr, port,
		       strerror(err));
		goto fail;
	}
	return s;
fail:
	free(s);
	errno = err;
	return NULL;
}

unsigned gp_metrics_server_port(const struct gp_metrics_server *s)
{
	return s->port;
}

void gp_metrics_server_stop(struct gp_metrics_server *s)
{
	if (!s)
		return;
	/* joins the polling thread and closes the listening socket it was given */
	MHD_stop_daemon(s->mhd);
	free(s);
}
