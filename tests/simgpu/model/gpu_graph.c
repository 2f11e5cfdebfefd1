/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_graph.c — stream capture and graphs. A capturing stream appends the
 * work it is given to a graph instead of running it; streams that wait on
 * an event recorded inside the capture join it. A graph is an ordered list
 * of work items; instantiating copies it; launching an executable graph
 * submits its items in order to a stream (so a multi-stream capture
 * replays serialised on the launch stream).
 */
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

int sg_capture_append_locked(struct sg_graph *g, const struct sg_work *w)
{
	if (g->n == g->cap) {
		size_t nc = g->cap ? g->cap * 2 : 16;
		struct sg_work *n = realloc(g->nodes, nc * sizeof(*n));

		if (!n)
			return SG_ENOMEM;
		g->nodes = n;
		g->cap = nc;
	}
	g->nodes[g->n] = *w;
	g->nodes[g->n].stage_src = 0;
	g->n++;
	return SG_OK;
}

void sg_capture_invalidate_locked(struct sg_graph *g)
{
	if (g)
		g->invalidated = true;
}

int sg_capture_begin(struct sg_stream *s, int mode)
{
	struct sg_graph *g;
	int err = SG_OK;

	if (mode < SG_CAPTURE_GLOBAL || mode > SG_CAPTURE_RELAXED)
		return SG_EINVAL;
	pthread_mutex_lock(&sg_mu);
	if (s->type == SG_ST_LEGACY) {
		err = SG_ECAPTURE_UNSUPPORTED;
	} else if (s->capture) {
		err = SG_EILLEGAL_STATE;
	} else if (!(g = calloc(1, sizeof(*g))) || sg_handle_add(g, SG_HK_GRAPH)) {
		free(g);
		err = SG_ENOMEM;
	} else {
		g->capturing = true;
		g->mode = mode;
		g->dev = s->dev;
		g->origin = s;
		s->capture = g;
		s->capture_origin = true;
	}
	pthread_mutex_unlock(&sg_mu);
	return err;
}

static void graph_free_locked(struct sg_graph *g)
{
	sg_handle_del(g);
	free(g->nodes);
	free(g);
}

int sg_capture_end(struct sg_stream *s, struct sg_graph **out)
{
	struct sg_graph *g;
	int err = SG_OK;

	*out = NULL;
	pthread_mutex_lock(&sg_mu);
	g = s->capture;
	if (!g) {
		err = SG_EILLEGAL_STATE;
		goto out;
	}
	if (!s->capture_origin) {
		sg_capture_invalidate_locked(g);
		err = SG_ECAPTURE_UNMATCHED;
		goto out;
	}
	for (struct sg_stream *t = sg_dev_streams(g->dev); t; t = t->dev_next)
		if (t->capture == g) {
			t->capture = NULL;
			t->capture_origin = false;
		}
	s->capture = NULL;
	g->capturing = false;
	if (g->invalidated) {
		graph_free_locked(g);
		err = SG_ECAPTURE_INVALIDATED;
	} else {
		*out = g;
	}
out:
	pthread_mutex_unlock(&sg_mu);
	return err;
}

int sg_capture_status(struct sg_stream *s)
{
	int st;

	pthread_mutex_lock(&sg_mu);
	st = !s->capture	       ? SG_CAPTURE_NONE
	     : s->capture->invalidated ? SG_CAPTURE_INVALIDATED
				       : SG_CAPTURE_ACTIVE;
	pthread_mutex_unlock(&sg_mu);
	return st;
}

int sg_graph_instantiate(void *graph, struct sg_exec **out)
{
	struct sg_graph *g = graph;
	struct sg_exec *x = NULL;
	int err = SG_OK;

	*out = NULL;
	pthread_mutex_lock(&sg_mu);
	if (!sg_handle_is(graph, SG_HK_GRAPH) || g->capturing) {
		err = SG_EINVAL;
		goto out;
	}
	x = calloc(1, sizeof(*x));
	if (x && g->n)
		x->nodes = malloc(g->n * sizeof(*x->nodes));
	if (!x || (g->n && !x->nodes) || sg_handle_add(x, SG_HK_EXEC)) {
		if (x)
			free(x->nodes);
		free(x);
		err = SG_ENOMEM;
		goto out;
	}
	if (g->n)
		memcpy(x->nodes, g->nodes, g->n * sizeof(*x->nodes));
	x->n = g->n;
	*out = x;
out:
	pthread_mutex_unlock(&sg_mu);
	return err;
}

int sg_graph_destroy(void *graph)
{
	struct sg_graph *g = graph;
	int err = SG_OK;

	pthread_mutex_lock(&sg_mu);
	if (!sg_handle_is(graph, SG_HK_GRAPH) || g->capturing)
		err = SG_EINVAL;
	else
		graph_free_locked(g);
	pthread_mutex_unlock(&sg_mu);
	return err;
}

size_t sg_graph_nodes(void *graph)
{
	size_t n = 0;

	pthread_mutex_lock(&sg_mu);
	if (sg_handle_is(graph, SG_HK_GRAPH))
		n = ((struct sg_graph *)graph)->n;
	pthread_mutex_unlock(&sg_mu);
	return n;
}

int sg_exec_destroy(void *exec)
{
	struct sg_exec *x = exec;
	int err = SG_OK;

	pthread_mutex_lock(&sg_mu);
	if (!sg_handle_is(exec, SG_HK_EXEC)) {
		err = SG_EHANDLE;
	} else {
		sg_handle_del(x);
		free(x->nodes);
		free(x);
	}
	pthread_mutex_unlock(&sg_mu);
	return err;
}

int sg_graph_launch(void *exec, struct sg_stream *s)
{
	struct sg_exec *x = exec;
	struct sg_work *nodes;
	size_t n, i;
	int err = SG_OK;

	pthread_mutex_lock(&sg_mu);
	if (!sg_handle_is(exec, SG_HK_EXEC)) {
		pthread_mutex_unlock(&sg_mu);
		return SG_EHANDLE;
	}
	/* a private copy: submission may wait for queue space without the lock */
	n = x->n;
	nodes = n ? malloc(n * sizeof(*nodes)) : NULL;
	if (n && !nodes) {
		pthread_mutex_unlock(&sg_mu);
		return SG_ENOMEM;
	}
	if (n)
		memcpy(nodes, x->nodes, n * sizeof(*nodes));
	for (i = 0; i < n && !err; i++)
		err = sg_submit_locked(s, &nodes[i], NULL, 0, NULL);
	pthread_mutex_unlock(&sg_mu);
	free(nodes);
	return err;
}
