/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_metrics_http.c — the /metrics endpoint (src/daemon/metrics_http.c)
 * on 127.0.0.1 with a port the kernel picks, spoken to over a plain
 * socket: GET /metrics (status, content type, the fill callback's body),
 * HEAD, GET / , 404, 405 with Allow, 503 when the page cannot be made; a
 * second server on the same port fails with one message naming the
 * address and the cause; stop joins and closes its socket.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/metrics_http.h"
#include "log.h"

static const char page[] = "# HELP x_total x\n# TYPE x_total counter\nx_total 1\n";

struct fill_ctx {
	int calls;
	int fail; /* -errno to return */
};

static int fill(void *ctx, char **body, size_t *len)
{
	struct fill_ctx *f = ctx;

	f->calls++;
	if (f->fail)
		return f->fail;
	*body = strdup(page);
	*len = strlen(page);
	return *body ? 0 : -ENOMEM;
}

/* The whole response to request (sent as is) from 127.0.0.1:port; malloc'ed. */
static char *http(unsigned port, const char *request)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char *buf = malloc(65536);
	size_t n = 0;
	ssize_t got;

	assert_true(fd >= 0);
	assert_non_null(buf);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(fd, request, strlen(request)), (ssize_t)strlen(request));
	while ((got = read(fd, buf + n, 65535 - n)) > 0)
		n += (size_t)got;
	buf[n] = '\0';
	close(fd);
	return buf;
}

static char *get(unsigned port, const char *method, const char *path)
{
	char req[256];

	snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
		 method, path);
	return http(port, req);
}

static const char *body_of(const char *resp)
{
	const char *b = strstr(resp, "\r\n\r\n");

	assert_non_null(b);
	return b + 4;
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void routes(void **state)
{
	struct fill_ctx ctx = { 0 };
	int fds = open_fds();
	struct gp_metrics_server *s = gp_metrics_server_start("127.0.0.1", 0, fill, &ctx);
	unsigned port;
	char *r;

	assert_non_null(s);
	port = gp_metrics_server_port(s);
	assert_true(port > 0);

	r = get(port, "GET", "/metrics");
	assert_non_null(strstr(r, "HTTP/1.1 200"));
	assert_non_null(strstr(r, "\r\nContent-Type: " GP_METRICS_CONTENT_TYPE "\r\n"));
	assert_string_equal(body_of(r), page);
	assert_int_equal(ctx.calls, 1);
	free(r);

	r = get(port, "HEAD", "/metrics");
	assert_non_null(strstr(r, "HTTP/1.1 200"));
	assert_string_equal(body_of(r), "");
	free(r);

	r = get(port, "GET", "/");
	assert_non_null(strstr(r, "HTTP/1.1 200"));
	assert_non_null(strstr(body_of(r), "href=\"/metrics\""));
	free(r);

	r = get(port, "GET", "/metrics/x");
	assert_non_null(strstr(r, "HTTP/1.1 404"));
	free(r);

	r = http(port, "POST /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
		       "Content-Length: 3\r\n\r\nabc");
	assert_non_null(strstr(r, "HTTP/1.1 405"));
	assert_non_null(strstr(r, "\r\nAllow: GET, HEAD\r\n"));
	free(r);

	ctx.fail = -EIO;
	r = get(port, "GET", "/metrics");
	assert_non_null(strstr(r, "HTTP/1.1 503"));
	free(r);
	assert_int_equal(ctx.calls, 3); /* GET, HEAD, the failed GET: /, 404 and 405 never render */

	gp_metrics_server_stop(s);
	gp_metrics_server_stop(NULL);
	assert_int_equal(open_fds(), fds); /* the listening socket is closed, the thread gone */
}

/* Runs start(addr, port) with stderr captured; returns the server, *msg what it printed. */
static struct gp_metrics_server *start_captured(const char *addr, unsigned port, char *msg,
						size_t len)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);
	struct gp_metrics_server *s;
	size_t n;

	assert_non_null(tmp);
	fflush(stderr);
	dup2(fileno(tmp), STDERR_FILENO);
	s = gp_metrics_server_start(addr, port, fill, NULL);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(msg, 1, len - 1, tmp);
	msg[n] = '\0';
	fclose(tmp);
	return s;
}

static size_t lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void bind_errors(void **state)
{
	struct fill_ctx ctx = { 0 };
	struct gp_metrics_server *s = gp_metrics_server_start("127.0.0.1", 0, fill, &ctx), *s2;
	char msg[1024], want[128];

	assert_non_null(s);
	snprintf(want, sizeof(want), "metrics endpoint 127.0.0.1:%u: %s", gp_metrics_server_port(s),
		 strerror(EADDRINUSE));
	s2 = start_captured("127.0.0.1", gp_metrics_server_port(s), msg, sizeof(msg));
	assert_null(s2);
	assert_int_equal(errno, EADDRINUSE);
	assert_non_null(strstr(msg, want));
	assert_int_equal(lines(msg), 1);
	gp_metrics_server_stop(s);

	s2 = start_captured("localhost", 0, msg, sizeof(msg));
	assert_null(s2);
	assert_non_null(
		strstr(msg, "metrics endpoint localhost:0: not a numeric IPv4 or IPv6 address"));
	assert_int_equal(lines(msg), 1);

	/* IPv6 loopback, where the host has it */
	s2 = start_captured("::1", 0, msg, sizeof(msg));
	if (s2)
		assert_true(gp_metrics_server_port(s2) > 0);
	else
		print_message("no IPv6 loopback here: %s", msg);
	gp_metrics_server_stop(s2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(routes),
		cmocka_unit_test(bind_errors),
	};

	gp_log_level = LOG_ERR; /* the 503's warning is expected */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
