/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* replay_standin.c — stand-in kernels (replay_standin.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/replay_standin.h"

#define CUDA_ERROR_INVALID_IMAGE     200
#define CUDA_ERROR_INVALID_PTX	     218
#define CUDA_ERROR_NO_BINARY_FOR_GPU 209

/* Spins until %globaltimer (ns) has advanced by the argument: a duration that does not depend on clocks. */
static const char spin_ptx[] = ".version 7.0\n"
			       ".target sm_50\n"
			       ".address_size 64\n"
			       ".visible .entry gp_replay_spin(.param .u64 gp_replay_spin_ns)\n"
			       "{\n"
			       "\t.reg .pred %p<2>;\n"
			       "\t.reg .b64 %rd<6>;\n"
			       "\tld.param.u64 %rd1, [gp_replay_spin_ns];\n"
			       "\tmov.u64 %rd2, %globaltimer;\n"
			       "$L_spin:\n"
			       "\tmov.u64 %rd3, %globaltimer;\n"
			       "\tsub.u64 %rd4, %rd3, %rd2;\n"
			       "\tsetp.lt.u64 %p1, %rd4, %rd1;\n"
			       "\t@%p1 bra $L_spin;\n"
			       "\tret;\n"
			       "}\n";

/* What the simulator's module lists for a kernel: the name its launches had. */
#define UNNAMED_STANDIN "gpuprobed_replay_unnamed"
static const char *standin_name(const struct gp_rkernel *k)
{
	if (!k->name)
		return UNNAMED_STANDIN;
	return k->mangled && k->mangled[0] ? k->mangled : k->name;
}

void gp_standins_init(struct gp_standins *s, const struct gp_cuda *cu, const struct gp_rprocess *p)
{
	memset(s, 0, sizeof(*s));
	s->cu = cu;
	s->p = p;
	pthread_mutex_init(&s->lock, NULL);
}

static char *name_module(const struct gp_rprocess *p)
{
	size_t len = sizeof("simgpu-module\n") + sizeof(UNNAMED_STANDIN) + 1;
	char *text, *w;

	for (size_t k = 0; k < p->nkernels; k++)
		len += strlen(standin_name(&p->kernels[k])) + 1;
	if (!(text = malloc(len)))
		return NULL;
	w = text + sprintf(text, "simgpu-module\n%s\n", UNNAMED_STANDIN);
	for (size_t k = 0; k < p->nkernels; k++)
		w += sprintf(w, "%s\n", standin_name(&p->kernels[k]));
	return text;
}

/* Loads the module of device (the calling thread's context) and its functions. */
static int load(struct gp_standins *s, int device, const char **what)
{
	const struct gp_cuda *cu = s->cu;
	size_t nfunc = s->p->nkernels + 1;
	void **func = calloc(nfunc, sizeof(*func));
	char *names = NULL;
	int rc;

	if (!func)
		return -ENOMEM;
	*what = "cuModuleLoadData";
	rc = s->names ? 1 : cu->cuModuleLoadData(&s->module[device], spin_ptx);
	if (rc && (s->names || rc == CUDA_ERROR_INVALID_IMAGE || rc == CUDA_ERROR_INVALID_PTX ||
		   rc == CUDA_ERROR_NO_BINARY_FOR_GPU)) {
		if (!(names = name_module(s->p))) {
			free(func);
			return -ENOMEM;
		}
		rc = cu->cuModuleLoadData(&s->module[device], names);
		free(names);
		if (rc)
			goto fail;
		s->names = true;
	} else if (rc) {
		goto fail;
	}
	*what = "cuModuleGetFunction";
	if (!s->names) {
		rc = cu->cuModuleGetFunction(&func[0], s->module[device], "gp_replay_spin");
	} else {
		rc = cu->cuModuleGetFunction(&func[0], s->module[device], UNNAMED_STANDIN);
		for (size_t k = 0; !rc && k < s->p->nkernels; k++)
			rc = cu->cuModuleGetFunction(&func[k + 1], s->module[device],
						     standin_name(&s->p->kernels[k]));
	}
	if (rc)
		goto fail;
	s->func[device] = func;
	return 0;
fail:
	free(func);
	s->module[device] = NULL;
	return rc;
}

int gp_standins_load(struct gp_standins *s, int device, const char **what)
{
	int rc = 0;

	if (device < 0 || device >= GP_STANDIN_DEVICES) {
		*what = "device out of range";
		return -EINVAL;
	}
	pthread_mutex_lock(&s->lock);
	if (!s->func[device])
		rc = load(s, device, what);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int gp_standin_launch(struct gp_standins *s, int device, int k, __u64 ns, void *stream,
		      const char **what)
{
	void *params[] = { &ns };
	void *f;
	int rc = 0;

	if ((rc = gp_standins_load(s, device, what)))
		return rc;
	f = s->names && k >= 0 ? s->func[device][k + 1] : s->func[device][0];
	*what = "cuLaunchKernel";
	return s->cu->cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL);
}

const char *gp_standins_kind(const struct gp_standins *s)
{
	for (int d = 0; d < GP_STANDIN_DEVICES; d++)
		if (s->func[d])
			return s->names ? "simulator names" : "ptx";
	return NULL;
}

void gp_standins_release(struct gp_standins *s)
{
	for (int d = 0; d < GP_STANDIN_DEVICES; d++) {
		if (s->module[d])
			s->cu->cuModuleUnload(s->module[d]);
		free(s->func[d]);
	}
	pthread_mutex_destroy(&s->lock);
}
