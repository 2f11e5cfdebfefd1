/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind.bpf.h — a traced thread's user stack walked at the probe, into a
 * gp_api_call_ustack (events.h): by the unwind tables userspace built from
 * the files' .eh_frame (include/gpuprobed/unwind.h) where the process has
 * them, frame by frame by frame pointer through code without a table, by
 * frame pointers alone for a process without tables; then, in a CPython
 * process, the thread's Python frames. Included by gpu_api.bpf.c only.
 *
 * The walk starts at the call's return: ip is the call site (a return
 * address: every pc of the walk is one, so a row is looked up at pc - 1),
 * sp and rbp the caller's own. Per frame: the mapping (binary search over
 * the process's sorted mappings), the row (binary search over the file's
 * rows), the CFA, the return address at CFA - 8, the caller's rbp. Every
 * element is fetched with its own map lookup, not by indexing a map value:
 * then the verifier need not track the search's bounds precisely, and the
 * loop's states prune (indexing made it explode past a million
 * instructions). The frames are a bpf_loop, each search a bounded loop.
 *
 * What makes it cheap (make bench: ~15 ns a frame against ~7 by frame
 * pointers): the stack is copied a page at a time and every word (return
 * address, saved rbp) read from the copy; a thread keeps the rows its walks
 * used by return address (gp_task_state.uw_cache, valid while the process's
 * mappings are those published then: gp_uw_proc.gen), so a loop's call
 * sites need no search. The walk's position lives in task storage, not on
 * the program's stack: the verifier does not carry values in map memory
 * from one frame to the next, so it checks the frame's code in a few passes
 * (~93k instructions processed for the program, against ~406k when the
 * position was on the stack and the 1M limit).
 */
#ifndef GP_UNWIND_BPF_H
#define GP_UNWIND_BPF_H

/* The rows of every file's unwind table (mmapable: userspace writes a file's rows in place). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* set by userspace */
	__type(key, __u32);
	__type(value, struct gp_uw_row);
} uw_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GP_UW_MAX_FILES);
	__type(key, __u32);
	__type(value, struct gp_uw_file);
} uw_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GP_UW_MAX_PROCS *GP_UW_MAX_MAPS);
	__type(key, __u32); /* slot * GP_UW_MAX_MAPS + i */
	__type(value, struct gp_uw_map);
} uw_maps SEC(".maps");

/*
 * The code objects seen on a process's Python stacks: one not seen yet holds
 * the process until userspace has named it (GP_EVF_PY_HELD). LRU: a code
 * object forgotten is only held for once more.
 */
struct gp_py_code_key {
	__u32 tgid;
	__u32 pad;
	__u64 code;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct gp_py_code_key);
	__type(value, __u8);
} py_codes SEC(".maps");

/* Per process running CPython: where its interpreter keeps the thread's frames. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GP_UW_MAX_PROCS);
	__type(key, __u32); /* tgid */
	__type(value, struct gp_py_proc);
} py_procs SEC(".maps");

/* A frame-pointer chain longer than this between two frames is not one (a frame of 64 MiB?) */
#define GP_MAX_FRAME_BYTES (64ULL << 20)

/*
 * A native walk: what it reads from (on the program's stack, the bpf_loop's
 * context) and where it is (s, in the thread's task storage: the verifier
 * does not follow values in map memory from frame to frame, so the walk's
 * callback is checked in a few passes, not once per frame it could reach).
 */
struct uw_walk {
	struct gp_api_call_ustack *rec;
	struct gp_task_state *st;
	struct gp_uw_walk_state *s;
	__u32 slot, nmaps;
};

/* The mapping holding pc: its bias and file slot; false when the process has none there. */
static __always_inline bool uw_find_map(struct uw_walk *w, __u64 pc, __u64 *bias, __u32 *file)
{
	__u32 base = w->slot * GP_UW_MAX_MAPS, lo = 0, hi = w->nmaps, k;
	struct gp_uw_map *m;

	if (pc >= w->s->map_start && pc < w->s->map_end) {
		*bias = w->s->map_bias;
		*file = w->s->map_file;
		return true;
	}

	/* the last mapping with start <= pc, in [lo, hi) */
	for (int i = 0; i < GP_UW_MAP_STEPS && lo + 1 < hi; i++) {
		__u32 mid = (lo + hi) / 2;

		k = base + mid;
		m = bpf_map_lookup_elem(&uw_maps, &k);
		if (!m)
			return false;
		if (m->start <= pc)
			lo = mid;
		else
			hi = mid;
	}
	k = base + lo;
	m = bpf_map_lookup_elem(&uw_maps, &k);
	if (!m || pc < m->start || pc >= m->end)
		return false;
	w->s->map_start = m->start;
	w->s->map_end = m->end;
	w->s->map_bias = *bias = m->bias;
	w->s->map_file = *file = m->file;
	return true;
}

/* The row of file that covers key (a vaddr of the file); NULL when none does. */
static __always_inline struct gp_uw_row *uw_find_row(__u32 file, __u64 key)
{
	struct gp_uw_file *f = bpf_map_lookup_elem(&uw_files, &file);
	struct gp_uw_row *r;
	__u32 lo, hi;

	if (!f || !f->n || key > 0xffffffffULL)
		return NULL;
	lo = f->first;
	hi = f->first + f->n;
	r = bpf_map_lookup_elem(&uw_rows, &lo);
	if (!r || r->pc > key)
		return NULL;
	/* the last row with pc <= key, in [lo, hi) */
	for (int i = 0; i < GP_UW_ROW_STEPS && lo + 1 < hi; i++) {
		__u32 mid = (lo + hi) / 2;

		r = bpf_map_lookup_elem(&uw_rows, &mid);
		if (!r)
			return NULL;
		if (r->pc <= key)
			lo = mid;
		else
			hi = mid;
	}
	return bpf_map_lookup_elem(&uw_rows, &lo);
}

/*
 * A word of the stack. The stack is copied from addr to the end of its page
 * (never into a page that may not exist) and later words read from the copy:
 * the frames of a walk lie close together, so twenty of them cost one or two
 * reads, not two a frame (~40 ns each).
 */
static __always_inline long uw_peek(struct uw_walk *w, __u64 *dst, __u64 addr)
{
	struct gp_uw_walk_state *s = w->s;
	__u64 off;

	/* outside the copy, or not 8-aligned in it (rare: stack slots are): copy from addr */
	if (addr < s->page_base || addr + 8 > s->page_base + s->page_len ||
	    ((addr - s->page_base) & 7)) {
		__u64 want = ((addr | 4095) + 1) - addr; /* to the end of addr's page: 1 .. 4096 */
		long err;

		if (want < 8)
			want = 8; /* the word runs onto the next page */
		want = ((want - 1) & 4095) + 1;
		asm volatile("" : "+r"(want));
		err = bpf_probe_read_user(w->st->stack_page, want, (void *)addr);
		if (err)
			return err;
		s->page_base = addr;
		s->page_len = want;
	}
	off = (addr - s->page_base) &
	      0xff8; /* 8-aligned, < page_len - 7: the verifier sees it inside */
	*dst = *(__u64 *)&w->st->stack_page[off];
	return 0;
}

/* uw_peek for a word the walk needs: 1 ends it (unreadable memory). */
static __always_inline int uw_read(struct uw_walk *w, __u64 *dst, __u64 addr)
{
	long err = uw_peek(w, dst, addr);

	if (err) {
		w->s->stop = GP_STOP_READ;
		w->s->err = (__s32)err;
		return 1;
	}
	return 0;
}

/* Code without a table: the caller by frame pointer, if rbp is a frame pointer at all. */
static __always_inline int uw_fp_step(struct uw_walk *w)
{
	__u64 next, ret;

	if (!w->s->bp_ok || w->s->bp < w->s->sp || (w->s->bp & 7) ||
	    w->s->bp - w->s->sp > GP_MAX_FRAME_BYTES) {
		w->s->stop = GP_STOP_NO_TABLE;
		return 1;
	}
	if (uw_read(w, &next, w->s->bp) || uw_read(w, &ret, w->s->bp + 8))
		return 1;
	if (!ret) {
		w->s->stop = GP_STOP_FP_END;
		return 1;
	}
	w->s->fp_frames++;
	w->s->sp = w->s->bp + 16;
	w->s->pc = ret;
	w->s->bp = next;
	return 0;
}

/* One frame: record pc, then find its caller's pc, sp and rbp. 1 ends the walk (w->s->stop says why). */
static int uw_step(__u32 i, struct uw_walk *w)
{
	struct gp_uw_walk_state *s = w->s;
	__u64 pc = s->pc, sp = s->sp, bp = s->bp, bias, off, cfa, ra;
	__u32 n = s->n, file;
	struct gp_uw_cached_row *c;
	struct gp_uw_row *r, row;
	__u8 f, bp_ok = s->bp_ok;

	if (n >= GP_USTACK_MAX_FRAMES) {
		s->stop = GP_STOP_DEPTH;
		return 1;
	}
	w->rec->words[n & (GP_USTACK_MAX_WORDS - 1)] = pc;
	s->n = n + 1;
	c = &w->st->uw_cache[(pc ^ (pc >> 6) ^ (pc >> 12)) & (GP_UW_CACHE - 1)];
	if (c->pc == pc && c->gen == s->gen) {
		row = c->row;
	} else {
		if (!uw_find_map(w, pc, &bias, &file)) {
			/* anonymous code (a JIT's: perf maps name it), or a file mapped since: frame pointers */
			if (uw_fp_step(w)) {
				if (s->stop == GP_STOP_NO_TABLE)
					s->stop = GP_STOP_NO_MAPPING;
				return 1;
			}
			return 0;
		}
		if (file == GP_UW_FILE_NONE)
			return uw_fp_step(w);
		r = uw_find_row(file,
				pc - bias - 1); /* a return address: its call is the byte before */
		if (!r)
			return uw_fp_step(w);
		row = *r;
		c->pc = pc;
		c->gen = s->gen;
		c->row = row;
	}
	f = row.flags;
	off = (__u64)row.cfa_off << ((f & GP_UW_OFF_X8) ? 3 : 0);
	switch (GP_UW_CFA_TYPE(f)) {
	case GP_UW_CFA_RSP:
		cfa = sp + off;
		break;
	case GP_UW_CFA_RBP:
		if (!bp_ok) {
			s->stop = GP_STOP_RBP_UNKNOWN;
			return 1;
		}
		cfa = bp + off;
		break;
	case GP_UW_CFA_PLT:
		cfa = sp + row.cfa_off + (((pc & 15) >= (__u64)(__u8)row.rbp_off) ? 8 : 0);
		break;
	case GP_UW_CFA_DEREF:
		if (!bp_ok) {
			s->stop = GP_STOP_RBP_UNKNOWN;
			return 1;
		}
		if (uw_read(w, &cfa, bp + (__s16)row.cfa_off))
			return 1;
		break;
	default: /* a stop row: the outermost frame, or what the rows cannot say */
		s->detail = GP_UW_STOP_CAUSE(f);
		s->stop = s->detail == GP_UW_STOP_END ? GP_STOP_END : GP_STOP_TABLE;
		return 1;
	}
	if (uw_read(w, &ra, cfa - 8))
		return 1;
	switch (GP_UW_RBP_RULE(f)) {
	case GP_UW_RBP_SAME:
		break;
	case GP_UW_RBP_CFA:
		bp_ok = !uw_peek(w, &bp, cfa + 8 * (__s64)row.rbp_off);
		break;
	case GP_UW_RBP_DEREF:
		bp_ok = bp_ok && !uw_peek(w, &bp, bp + 8 * (__s64)row.rbp_off);
		break;
	default:
		bp_ok = 0;
		break;
	}
	s->bp = bp;
	s->bp_ok = bp_ok;
	if (!ra) { /* no caller: the thread's first frame */
		s->stop = GP_STOP_END;
		return 1;
	}
	s->sp = cfa;
	s->pc = ra;
	return 0;
}

/*
 * The process has no tables: by frame pointers alone, a page of the stack
 * copied at a time (from the frame to the end of its page: never into a
 * page that may not exist), so a walk of twenty frames costs one or two
 * reads, not twenty (~80 ns each). The chain ends where it stops being one
 * — a saved rbp not above the frame it came from, misaligned, or
 * implausibly far — before it is read: the kernel's own walker reads until
 * a read faults, and on the main thread glibc leaves argc in rbp (a fault,
 * ~0.6 us, per walk).
 */
static __always_inline void fp_walk(struct pt_regs *ctx, struct gp_task_state *st,
				    struct uw_walk *w)
{
	struct gp_api_call_ustack *rec = w->rec;
	__u64 fp = ctx->bp, low = ctx->sp, base = 0, len = 0;

	rec->words[0] = ctx->ip;
	w->s->n = 1;
	w->s->stop = GP_STOP_FP_END;
	for (__u32 i = 1; i < GP_USTACK_MAX_FRAMES; i++) {
		__u64 off, next, ret;

		if (fp < low || (fp & 7) || fp - low > GP_MAX_FRAME_BYTES)
			return;
		if (fp < base || fp + 16 > base + len) {
			__u64 want =
				((fp | 4095) + 1) - fp; /* to the end of fp's page: 8 .. 4096 */
			long err;

			if (want < 16)
				want = 16; /* the frame's return address is on the next page */
			want = ((want - 1) & 4095) + 1;
			asm volatile("" : "+r"(want));
			err = bpf_probe_read_user(st->stack_page, want, (void *)fp);
			if (err) {
				if (i ==
				    1) { /* a plausible first frame that cannot be read (not in memory) */
					w->s->stop = GP_STOP_READ;
					w->s->err = (__s32)err;
					count(&drops, GP_DROP_STACK_UNREAD);
				}
				return;
			}
			base = fp;
			len = want;
		}
		off = (fp - base) &
		      0xff8; /* < len - 15, and the verifier sees it inside the page */
		next = *(__u64 *)&st->stack_page[off];
		ret = *(__u64 *)&st->stack_page[off + 8];
		if (!ret)
			return;
		rec->words[i & (GP_USTACK_MAX_WORDS - 1)] = ret;
		w->s->n = i + 1;
		w->s->fp_frames = (__u8)i;
		low = fp + 16;
		fp = next;
	}
	w->s->stop = GP_STOP_DEPTH;
}

/* ---- Python ------------------------------------------------------------------------------- */

/* A Python walk: what it reads from, and where it is (s, in task storage: see uw_walk). */
struct py_walk {
	const struct gp_py_proc *py;
	struct gp_task_state *st;
	struct gp_api_call_ustack *rec;
	struct gp_py_walk_state *s;
};

/* A field of the frame copied into stack_page (frame_read bytes, < 256): offsets are masked in. */
static __always_inline __u64 py_u64(const struct gp_task_state *st, __u16 off)
{
	return *(const __u64 *)&st->stack_page[off & 0xf8];
}

static __always_inline __u8 py_u8(const struct gp_task_state *st, __u16 off)
{
	return st->stack_page[off & 0xff];
}

static int py_step(__u32 i, struct py_walk *w)
{
	const struct gp_py_proc *py = w->py;
	struct gp_task_state *st = w->st;
	__u64 code, prev, instr, flags = 0;
	__u32 want = py->frame_read, idx;
	long err;

	if (!w->s->frame) {
		w->s->status = GP_PY_OK;
		return 1;
	}
	if (w->s->n >= GP_PY_MAX_FRAMES) {
		w->s->status = GP_PY_DEPTH;
		return 1;
	}
	want = ((want - 1) & 0xff) + 1; /* 1 .. 256 */
	err = bpf_probe_read_user(st->stack_page, want, (void *)w->s->frame);
	if (err) {
		w->s->status = GP_PY_READ;
		w->s->err = (__s32)err;
		return 1;
	}
	code = py_u64(st, py->frame_code);
	prev = py_u64(st, py->frame_prev);
	if (py->frame_owner != GP_PY_NONE && py_u8(st, py->frame_owner) == py->owner_shim) {
		/* a C-stack shim, not a function: the frame before it was entered from C */
		if (w->s->n) {
			idx = (w->s->base + 2 * (w->s->n - 1) + 1) & (GP_USTACK_MAX_WORDS - 1);
			w->rec->words[idx] |= (__u64)GP_PYF_ENTRY << 32;
		}
		w->s->frame = prev;
		return 0;
	}
	if (py->instr_is_ptr)
		instr = py_u64(st, py->frame_instr) - (code + py->code_adaptive);
	else
		instr = *(const __u32 *)&st->stack_page[py->frame_instr & 0xfc];
	if (py->frame_is_entry != GP_PY_NONE && py_u8(st, py->frame_is_entry))
		flags |= GP_PYF_ENTRY;
	if (py->version <= 0x030a) /* each frame is its own eval activation */
		flags |= GP_PYF_ENTRY;
	idx = (w->s->base + 2 * w->s->n) & (GP_USTACK_MAX_WORDS - 1);
	w->rec->words[idx] = code;
	idx = (idx + 1) & (GP_USTACK_MAX_WORDS - 1);
	w->rec->words[idx] = (__u32)instr | flags << 32;
	w->s->hash = (w->s->hash ^ code) * 0x9e3779b97f4a7c15ULL;
	w->s->n++;
	w->s->frame = prev;
	return 0;
}

struct py_news {
	struct gp_api_call_ustack *rec;
	__u32 base, tgid;
	bool fresh;
};

/* Python frame i's code object: marked seen in py_codes; fresh when it was not. */
static int py_code_new(__u32 i, struct py_news *c)
{
	struct gp_py_code_key key = { .tgid = c->tgid };
	__u8 one = 1;

	key.code = c->rec->words[(c->base + 2 * i) & (GP_USTACK_MAX_WORDS - 1)];
	if (!bpf_map_lookup_elem(&py_codes, &key) &&
	    bpf_map_update_elem(&py_codes, &key, &one, BPF_NOEXIST) == 0)
		c->fresh = true;
	return 0;
}

/*
 * Kernels before 5.17 (no bpf_loop): each walk's step as a global function,
 * which the verifier checks once, on its own, whatever calls it (a bounded
 * loop of static steps would be checked once per iteration: past the
 * million-instruction limit). A global function takes numbers only, so it
 * finds the calling thread's walk where the walk keeps it, in task storage.
 */
__noinline int gp_uw_step_global(__u32 i, __u32 slot, __u32 nmaps)
{
	struct gp_task_state *st = task_state_of(current_task(), false);
	struct uw_walk w = { .slot = slot, .nmaps = nmaps };

	if (!st)
		return 1;
	w.st = st;
	w.rec = &st->stack_rec;
	w.s = &st->walk;
	return uw_step(i, &w);
}

__noinline int gp_py_step_global(__u32 i)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct gp_task_state *st = task_state_of(current_task(), false);
	struct gp_py_proc *py = bpf_map_lookup_elem(&py_procs, &tgid);
	struct py_walk w = { .py = py, .st = st };

	if (!st || !py)
		return 1;
	w.rec = &st->stack_rec;
	w.s = &st->pywalk;
	return py_step(i, &w);
}

/* 1 when frame i's code object was not seen before. */
__noinline int gp_py_code_new_global(__u32 i, __u32 base, __u32 tgid)
{
	struct gp_task_state *st = task_state_of(current_task(), false);
	struct py_news c = { .base = base, .tgid = tgid };

	if (!st)
		return 0;
	c.rec = &st->stack_rec;
	py_code_new(i, &c);
	return c.fresh;
}

/*
 * The calling thread's own Python frames: its thread state through the
 * interpreter's pthread key in glibc's per-thread key table (fsbase + the
 * offsets userspace checked), confirmed by the state's thread_id (== fsbase:
 * not another thread's, not the GIL holder's), then the frame chain.
 */
static __always_inline void py_walk(struct gp_task_state *st, struct gp_api_call_ustack *rec,
				    __u32 base, const struct gp_py_proc *py, bool with_loop)
{
	struct task_struct *task = current_task();
	struct gp_py_walk_state *s = &st->pywalk;
	struct py_walk w = { .py = py, .st = st, .rec = rec, .s = s };
	__u64 fsbase = no_task_btf ? BPF_CORE_READ(task, thread.fsbase) : task->thread.fsbase;
	__u64 slot, tstate, tid, frame;
	__s32 key;

	*s = (struct gp_py_walk_state){ .base = base };
	rec->py = GP_PY_NO_THREAD;
	rec->npy = 0;
	if (bpf_probe_read_user(&key, sizeof(key), (void *)py->tss_key_addr) || key < 0 ||
	    key >= 1024)
		return;
	if (key < 32) {
		slot = fsbase + py->tss_first + 16 * (__u64)key + 8;
	} else {
		__u64 second;

		if (bpf_probe_read_user(
			    &second, 8,
			    (void *)(fsbase + py->tss_second + 8 * (__u64)((__u32)key >> 5))) ||
		    !second)
			return;
		slot = second + 16 * (__u64)((__u32)key & 31) + 8;
	}
	if (bpf_probe_read_user(&tstate, 8, (void *)slot) || !tstate ||
	    bpf_probe_read_user(&tid, 8, (void *)(tstate + py->tstate_thread_id)) ||
	    tid != fsbase || bpf_probe_read_user(&frame, 8, (void *)(tstate + py->tstate_frame)))
		return;
	if (py->cframe_current != GP_PY_NONE && frame &&
	    bpf_probe_read_user(&frame, 8, (void *)(frame + py->cframe_current)))
		return;
	s->frame = frame;
	s->status = GP_PY_OK;
	/* shims are skipped: a few more steps than frames */
	if (!with_loop) {
		for (__u32 i = 0; i < GP_PY_MAX_FRAMES + 8; i++)
			if (gp_py_step_global(i))
				break;
	} else {
		bpf_loop(GP_PY_MAX_FRAMES + 8, py_step, &w, 0);
	}
	if (s->frame && s->status == GP_PY_OK)
		s->status = GP_PY_DEPTH;
	rec->py = s->status;
	rec->npy = s->n;
	rec->err = rec->err ? rec->err : s->err;
	/*
	 * A code object not seen before in this process: stop it as the call returns, so that its
	 * frames are named before it can free them (a script ending, a function made on the fly).
	 * The thread's last stack again (a loop) costs no look at all.
	 */
	if (s->n && s->hash != st->py_hash) {
		struct py_news c = { .rec = rec,
				     .base = base,
				     .tgid = bpf_get_current_pid_tgid() >> 32 };
		__u32 n = s->n;

		st->py_hash = s->hash;
		if (!with_loop) {
			for (__u32 i = 0; i < GP_PY_MAX_FRAMES && i < n; i++)
				c.fresh |= gp_py_code_new_global(i, base, c.tgid);
		} else {
			bpf_loop(n, py_code_new, &c, 0);
		}
		if (c.fresh) {
			__u64 now = bpf_ktime_get_ns();

			if (hold_current(current_task(), GP_HOLD_PYTHON, now, session_self(), 0,
					 0)) {
				rec->call.hdr.flags |= GP_EVF_PY_HELD;
				st->py_hold_ns = now;
			}
		}
	}
}

/*
 * The stack of the call that returns now into rec (its call part filled by
 * the caller); returns the record's size. with_loop: by bpf_loop, else by
 * the global steps (a program that names a bpf_loop callback does not load
 * before 5.13 at all, dead code or not: gpu_api.bpf.c has one of each).
 */
static __always_inline __u32 walk_stacks(struct pt_regs *ctx, struct gp_task_state *st,
					 struct gp_api_call_ustack *rec, bool with_loop)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct gp_uw_proc *up = bpf_map_lookup_elem(&uw_procs, &tgid);
	struct gp_py_proc *py = bpf_map_lookup_elem(&py_procs, &tgid);
	struct gp_uw_walk_state *ws = &st->walk;
	struct uw_walk w = { .rec = rec, .st = st, .s = ws };
	__u64 words;

	*ws = (struct gp_uw_walk_state){ .bp_ok = 1 };
	rec->err = 0;
	rec->py = GP_PY_NO;
	rec->npy = 0;
	rec->pad = 0;
	if (up && !up->gen) {
		/* code is being mapped: the published mappings may be wrong until published again */
		rec->words[0] = ctx->ip;
		ws->n = 1;
		ws->stop = GP_STOP_NO_MAPPING;
	} else if (up) {
		ws->pc = ctx->ip;
		ws->sp = ctx->sp;
		ws->bp = ctx->bp;
		w.slot = up->slot;
		ws->gen = up->gen;
		w.nmaps = up->nmaps;
		ws->stop = GP_STOP_DEPTH;
		if (!with_loop) {
			for (__u32 i = 0; i < GP_USTACK_MAX_FRAMES; i++)
				if (gp_uw_step_global(i, w.slot, w.nmaps))
					break;
		} else {
			bpf_loop(GP_USTACK_MAX_FRAMES, uw_step, &w, 0);
		}
	} else {
		fp_walk(ctx, st, &w);
	}
	if (!ws->n) { /* at least the call site */
		rec->words[0] = ctx->ip;
		ws->n = 1;
	}
	rec->nframes = ws->n;
	rec->stop = ws->stop;
	rec->stop_detail = ws->detail;
	rec->frames_fp = ws->fp_frames;
	rec->err = ws->err;
	if (py)
		py_walk(st, rec, ws->n & (GP_USTACK_MAX_FRAMES - 1 + 1), py,
			with_loop); /* n <= 127 */
	words = (__u64)rec->nframes + 2 * (__u64)rec->npy;
	return GP_USTACK_REC_SIZE(words, 0);
}

#endif /* GP_UNWIND_BPF_H */
