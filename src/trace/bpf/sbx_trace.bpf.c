/* The eBPF syscall recorder: kernel side. Loaded by src/trace/bpf_rec.c, which
 * sets `cfg` before load, switches recording on and off through `session`,
 * and drains `events` into the trace stream.
 *
 * What it records, for every task whose active pid namespace is cfg.pidns
 * (nested pid namespaces are not followed: their tasks' active namespace is
 * another one):
 *   - one TR_SYSCALL per syscall, emitted at exit with the return value; the
 *     number, arguments, entry time and string arguments are stashed at entry
 *     in task-local storage (freed by the kernel with the task, and it follows
 *     a thread through exec's de_thread, which a tid-keyed hash would not);
 *   - exit and exit_group at entry, since they never return;
 *   - TR_FORK, TR_EXEC and TR_EXIT from the scheduler's process tracepoints.
 * All hooks are BTF tracepoints (tp_btf): they need no tracefs, and their
 * arguments are typed kernel pointers that CO-RE can read.
 *
 * Cost (docs/BENCHMARKS.md): the object is loaded once per process and kept
 * between recordings, so a task's stash doubles as its membership: a task
 * that has one is in the namespace (a task's active pid namespace never
 * changes), with its ids there cached, and only a task without one asks
 * bpf_get_ns_current_pid_tgid, after a cheaper check of its pid level.
 * `session` (user space writes it through the mmaped .bss) numbers the
 * recording: an entry stashed in an earlier one is never completed in this
 * one. Strings are read only for calls that have string arguments.
 *
 * Nothing is dropped silently: a record that does not fit in the ring buffer
 * (or a stash that cannot be allocated) increments the per-CPU `lost`
 * counter, which user space turns into TR_LOST records. Invocations the
 * kernel itself skips (a program re-entered on one CPU) are counted by the
 * kernel as the program's recursion_misses, which user space adds too.
 *
 * Records are submitted with BPF_RB_NO_WAKEUP: user space polls, so no
 * syscall pays for waking the drain thread. */
#include "trace/bpf/sbx_vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "trace/bpf/sbx_trace_cfg.h"
#include "trace/trace_format.h"

/* The helpers that read task memory are GPL-only. */
char LICENSE[] SEC("license") = "Dual MIT/GPL";

const volatile struct sbx_trace_cfg cfg = {};

/* The program's only .bss variable (so at offset 0 of its mmap, where
 * bpf_rec.c writes state.session). */
volatile struct sbx_trace_state state;
#define session (state.session)
#define env_level (state.env_level)

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SBX_TRACE_RINGBUF_DEFAULT);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* A syscall between entry and exit. rec holds everything but the exit fields;
 * strings sit in fixed slots and are packed behind the record at emit time. */
struct stash {
	struct trace_syscall rec;
	struct mm_struct *mm; /* the address space the argument pointers belong to */
	__u64 str_ptr[2];     /* user addresses of str0 and str1 */
	__u32 ns_pid, ns_tgid; /* the task's ids in the namespace (cached) */
	int host_tid;	      /* the task's pid when they were, to notice de_thread */
	__u32 entered;	      /* session of the entry in rec, 0 when none is pending */
	__u32 seen;	      /* the last session the task made a syscall in */
	char str[2][TRACE_MAX_STR];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct stash);
} stashes SEC(".maps");

/* Where variable-length records are assembled before bpf_ringbuf_output
 * (bpf_ringbuf_reserve only takes constant sizes). Per-CPU is safe: the
 * kernel runs these programs with preemption disabled. */
struct scratch {
	__u8 buf[SBX_TRACE_SCRATCH_SIZE];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

static __always_inline void count_lost(void)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&lost, &zero);
	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline void emit(void *data, __u64 len)
{
	if (bpf_ringbuf_output(&events, data, len, BPF_RB_NO_WAKEUP) < 0)
		count_lost();
}

static __always_inline __u8 *scratch_buf(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&scratch, &zero);
}

/* True when the current task is in the recorded pid namespace; ns then
 * holds its pid (tid) and tgid as seen from there. */
static __always_inline bool in_env(struct bpf_pidns_info *ns)
{
	return bpf_get_ns_current_pid_tgid(cfg.pidns_dev, cfg.pidns_ino, ns, sizeof(*ns)) == 0;
}

/* The stash of the current task if it is in the namespace, NULL if not;
 * created (with the task's ids there) on its first syscall. The ids are asked
 * again when the task's pid changed: an execve by another thread of the
 * group made it the leader (de_thread). */
static __always_inline struct stash *member(struct task_struct *task, bool create)
{
	struct bpf_pidns_info ns;
	struct stash *s = bpf_task_storage_get(&stashes, task, 0, 0);
	if (s) {
		if (s->host_tid != task->pid && in_env(&ns)) {
			s->ns_pid = ns.pid;
			s->ns_tgid = ns.tgid;
			s->host_tid = task->pid;
		}
		return s;
	}
	if (!create)
		return NULL;
	__u32 level = env_level;
	if (level && task->thread_pid->level + 1 != level)
		return NULL;
	if (!in_env(&ns))
		return NULL;
	s = bpf_task_storage_get(&stashes, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s) {
		count_lost();
		return NULL;
	}
	s->ns_pid = ns.pid;
	s->ns_tgid = ns.tgid;
	s->host_tid = task->pid;
	if (!level)
		env_level = task->thread_pid->level + 1;
	return s;
}

static __always_inline void fill_header(struct trace_rec *h, __u16 type, __u16 len, struct bpf_pidns_info *ns,
					__u32 flags, __u64 ts)
{
	h->type = type;
	h->len = len;
	h->pid = ns->tgid;
	h->tid = ns->pid;
	h->flags = flags;
	h->ts_ns = ts;
}

static __always_inline void read_args(struct pt_regs *regs, __u64 *a)
{
#if defined(__TARGET_ARCH_x86)
	a[0] = regs->di;
	a[1] = regs->si;
	a[2] = regs->dx;
	a[3] = regs->r10;
	a[4] = regs->r8;
	a[5] = regs->r9;
#else
	a[0] = regs->orig_x0; /* regs[0] is the return value at exit; orig_x0 keeps the argument */
	a[1] = regs->regs[1];
	a[2] = regs->regs[2];
	a[3] = regs->regs[3];
	a[4] = regs->regs[4];
	a[5] = regs->regs[5];
#endif
}

/* Copies a user string into a TRACE_MAX_STR slot. Returns its length with the
 * NUL, or 0 with fault_flag set in *flags when it cannot be read (a bad
 * pointer, or a page not yet faulted in: the exit retries those). A string
 * that fills the slot is truncated only if its next byte is not the NUL. */
static __always_inline __u16 read_str(char *dst, __u64 src, __u32 *flags, __u32 trunc_flag, __u32 fault_flag)
{
	long n = bpf_probe_read_user_str(dst, TRACE_MAX_STR, (const void *)src);
	if (n <= 0) {
		*flags |= fault_flag;
		return 0;
	}
	*flags &= ~fault_flag;
	if (n == TRACE_MAX_STR) {
		char c = 0;
		if (bpf_probe_read_user(&c, 1, (const void *)(src + TRACE_MAX_STR - 1)) == 0 && c)
			*flags |= trunc_flag;
	}
	return (__u16)n;
}

/* The first two string arguments of syscall nr, as trace_sys_str_args()
 * says, from the stashed args. The loop is unrolled, so args[] is indexed by
 * constants only. */
static __always_inline void capture_strings(struct stash *s, long nr)
{
	__u8 mask = nr >= 0 && nr < SBX_TRACE_NR_MAX ? cfg.str_args[nr & (SBX_TRACE_NR_MAX - 1)] : 0;
	__u32 found = 0;
	s->rec.str0_len = s->rec.str1_len = 0;
	if (!mask)
		return;
	s->str_ptr[0] = s->str_ptr[1] = 0;
#pragma unroll
	for (int i = 0; i < 6; i++) {
		if (!(mask & (1u << i)))
			continue;
		if (found == 0)
			s->str_ptr[0] = s->rec.args[i];
		else if (found == 1)
			s->str_ptr[1] = s->rec.args[i];
		found++;
	}
	if (found > 0)
		s->rec.str0_len = read_str(s->str[0], s->str_ptr[0], &s->rec.h.flags, TRS_STR0_TRUNC, TRS_STR0_FAULT);
	if (found > 1)
		s->rec.str1_len = read_str(s->str[1], s->str_ptr[1], &s->rec.h.flags, TRS_STR1_TRUNC, TRS_STR1_FAULT);
}

SEC("tp_btf/sys_enter")
int sys_enter(__u64 *ctx)
{
	__u32 sess = session;
	if (!sess)
		return 0;
	struct task_struct *task = bpf_get_current_task_btf();
	struct stash *s = member(task, true);
	if (!s)
		return 0;
	struct pt_regs *regs = (struct pt_regs *)ctx[0];
	long nr = (long)ctx[1];
	__u64 now = bpf_ktime_get_ns();
	s->seen = sess;

	if (nr == cfg.nr_exit || nr == cfg.nr_exit_group) {
		struct trace_syscall r = {};
		r.h.type = TR_SYSCALL;
		r.h.len = sizeof(r);
		r.h.pid = s->ns_tgid;
		r.h.tid = s->ns_pid;
		r.h.ts_ns = now;
		r.nr = (__s32)nr;
		read_args(regs, r.args);
		r.enter_ns = now;
		s->entered = 0;
		emit(&r, sizeof(r));
		return 0;
	}

	s->rec.nr = (__s32)nr;
	s->rec.h.pid = s->ns_tgid;
	s->rec.h.tid = s->ns_pid;
	s->rec.h.flags = 0;
	s->rec.enter_ns = now;
	read_args(regs, s->rec.args);
	s->mm = task->mm;
	capture_strings(s, nr);
	s->entered = sess;
	return 0;
}

/* Packs the stashed record and its strings into the scratch buffer and
 * submits it. */
static __always_inline void emit_syscall(struct stash *s)
{
	/* Most syscalls have no string: reserve and fill in place, one copy. */
	if (!s->rec.str0_len && !s->rec.str1_len) {
		struct trace_syscall *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
		if (!r) {
			count_lost();
			return;
		}
		s->rec.h.len = sizeof(*r);
		__builtin_memcpy(r, &s->rec, sizeof(*r));
		bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
		return;
	}
	__u8 *buf = scratch_buf();
	if (!buf) {
		count_lost();
		return;
	}
	__u32 l0 = s->rec.str0_len, l1 = s->rec.str1_len;
	if (l0 > TRACE_MAX_STR)
		l0 = TRACE_MAX_STR;
	if (l1 > TRACE_MAX_STR)
		l1 = TRACE_MAX_STR;
	__u32 end = sizeof(struct trace_syscall) + l0 + l1;
	__u32 len = TRACE_ALIGN(end);

	s->rec.h.len = len;
	__builtin_memcpy(buf, &s->rec, sizeof(s->rec));
	if (l0)
		bpf_probe_read_kernel(buf + sizeof(struct trace_syscall), l0, s->str[0]);
	if (l1)
		bpf_probe_read_kernel(buf + sizeof(struct trace_syscall) + l0, l1, s->str[1]);
	/* the padding to 8 is part of the stream: zero it */
	*(__u64 *)(buf + end) = 0;
	emit(buf, len);
}

SEC("tp_btf/sys_exit")
int sys_exit(__u64 *ctx)
{
	__u32 sess = session;
	if (!sess)
		return 0;
	long ret = (long)ctx[1];
	struct task_struct *task = bpf_get_current_task_btf();

	/* Only the namespace's tasks have a stash: a task without one is not
	 * recorded (or has not made a syscall yet; this exit then ends one that
	 * began before the task had a stash). */
	struct stash *s = member(task, false);
	if (!s)
		return 0;
	if (s->entered != sess) {
		/* No entry in this recording. The task's first syscall in it: one
		 * that began before recording did (or a tracer or seccomp skipped
		 * it, which cannot be told apart here), as with a task without a
		 * stash. Otherwise a task of the namespace leaving a syscall it
		 * never entered: the seccomp filter refused it (seccomp runs
		 * before the sys_enter tracepoint). Those are the calls an audit
		 * wants most; record them from the registers. orig_ax -1: a tracer
		 * skipped the call (the determinism engine records what it
		 * answered itself). */
		if (s->seen != sess) {
			s->seen = sess;
			return 0;
		}
		struct pt_regs *regs = (struct pt_regs *)ctx[0];
#if defined(__TARGET_ARCH_x86)
		long nr = (long)regs->orig_ax;
#else
		long nr = (long)regs->syscallno;
#endif
		if (nr < 0)
			return 0;
		__u64 now = bpf_ktime_get_ns();
		s->rec.nr = (__s32)nr;
		s->rec.h.pid = s->ns_tgid;
		s->rec.h.tid = s->ns_pid;
		s->rec.h.flags = TRS_NO_ENTER;
		s->rec.enter_ns = now;
		read_args(regs, s->rec.args);
		capture_strings(s, nr);
		s->rec.h.type = TR_SYSCALL;
		s->rec.h.flags |= TRS_HAS_RET;
		s->rec.h.ts_ns = now;
		s->rec.ret = ret;
		emit_syscall(s);
		return 0;
	}
	s->entered = 0;
	/* The ids are the entry's, unless an execve by another thread of the
	 * group made this one the leader (de_thread): member() asked again. */
	s->rec.h.pid = s->ns_tgid;
	s->rec.h.tid = s->ns_pid;

	/* bpf_probe_read_user_str cannot fault pages in; a string on a page the
	 * task had not touched yet (ld.so's own .rodata, say) reads as a fault at
	 * entry but is resident now that the kernel has copied it. Only retry in
	 * the same address space: after a successful execve the pointers mean
	 * nothing. */
	if (s->rec.h.flags & (TRS_STR0_FAULT | TRS_STR1_FAULT) && s->mm == task->mm) {
		if (s->rec.h.flags & TRS_STR0_FAULT)
			s->rec.str0_len = read_str(s->str[0], s->str_ptr[0], &s->rec.h.flags, TRS_STR0_TRUNC,
						   TRS_STR0_FAULT);
		if (s->rec.h.flags & TRS_STR1_FAULT)
			s->rec.str1_len = read_str(s->str[1], s->str_ptr[1], &s->rec.h.flags, TRS_STR1_TRUNC,
						   TRS_STR1_FAULT);
	}

	s->rec.h.type = TR_SYSCALL;
	s->rec.h.flags |= TRS_HAS_RET;
	s->rec.h.ts_ns = bpf_ktime_get_ns();
	s->rec.ret = ret;
	emit_syscall(s);
	return 0;
}

/* The number of a task in the pid namespace at `level`: pid->numbers[level].nr.
 * numbers[] is a flexible array, so the element is located by hand (CO-RE
 * offset of the array plus the kernel's size of struct upid). */
static __always_inline __u32 pid_nr_at(struct pid *pid, __u32 level)
{
	int nr = 0;
	struct upid *up = (void *)pid + bpf_core_field_offset(struct pid, numbers) +
			  (level & 63) * bpf_core_type_size(struct upid);
	bpf_core_read(&nr, sizeof(nr), &up->nr);
	return (__u32)nr;
}

/* Fires in the parent (current) after the child is set up, before it can
 * run. The child's ids in the recorded namespace come from its struct pid at
 * the namespace's level, which is the level of the parent's pid (the parent
 * is in that namespace). The child may itself be in a new, nested pid
 * namespace (CLONE_NEWPID); it still has a number at our level. */
SEC("tp_btf/sched_process_fork")
int sched_process_fork(__u64 *ctx)
{
	if (!session)
		return 0;
	struct task_struct *parent = (struct task_struct *)ctx[0];
	struct task_struct *child = (struct task_struct *)ctx[1];
	struct bpf_pidns_info ns;

	if (!in_env(&ns))
		return 0;
	__u32 level = BPF_CORE_READ(parent, thread_pid, level);
	__u32 tid = pid_nr_at(BPF_CORE_READ(child, thread_pid), level);
	bool thread = BPF_CORE_READ(child, tgid) == BPF_CORE_READ(parent, tgid);

	struct trace_fork f = {};
	struct bpf_pidns_info child_ns = {.pid = tid, .tgid = thread ? ns.tgid : tid};
	fill_header(&f.h, TR_FORK, sizeof(f), &child_ns, thread ? 1 : 0, bpf_ktime_get_ns());
	f.parent_pid = ns.tgid;
	f.parent_tid = ns.pid;
	emit(&f, sizeof(f));
	return 0;
}

/* Counts the NULs of argv. A bpf_loop callback: the verifier checks it once,
 * where a plain loop over TRACE_MAX_ARGV bytes costs it most of a second. */
struct count_ctx {
	__u8 *argv;
	__u32 len;
	__u32 argc;
};

static long count_nul(__u32 i, void *arg)
{
	struct count_ctx *c = arg;
	__u64 k = i;
	/* one opaque copy, so the bounds check and the access use the same register */
	barrier_var(k);
	if (k >= c->len || k >= TRACE_MAX_ARGV)
		return 1;
	if (c->argv[k] == 0)
		c->argc++;
	return 0;
}

/* The path argument of an execve is often unreadable at entry: a child fresh
 * from fork has not faulted in its parent's .rodata yet, and after the exec
 * the exit cannot retry in the old address space. The kernel's copy of it is
 * here, though: bprm->filename is the path as passed, unless the kernel made
 * up a /dev/fd/N name (fdpath) for an execveat relative to a directory fd. */
static __always_inline void fill_exec_path(struct linux_binprm *bprm, __u8 *fn, __u32 fn_len)
{
	struct stash *s = bpf_task_storage_get(&stashes, bpf_get_current_task_btf(), 0, 0);
	if (!s || s->entered != session || !(s->rec.h.flags & TRS_STR0_FAULT) || BPF_CORE_READ(bprm, fdpath))
		return;
	if (fn_len > TRACE_MAX_STR || bpf_probe_read_kernel(s->str[0], fn_len, fn) < 0)
		return;
	s->rec.str0_len = fn_len;
	s->rec.h.flags &= ~TRS_STR0_FAULT;
	/* a full slot is a truncation only if more follows, as in read_str */
	char c[2] = {};
	if (fn_len == TRACE_MAX_STR &&
	    bpf_probe_read_kernel_str(c, sizeof(c), BPF_CORE_READ(bprm, filename) + TRACE_MAX_STR - 1) > 1)
		s->rec.h.flags |= TRS_STR0_TRUNC;
}

/* Fires in the task after the new image is in place: the filename is the
 * kernel's copy, argv is on the new stack the kernel just wrote (resident). */
SEC("tp_btf/sched_process_exec")
int sched_process_exec(__u64 *ctx)
{
	if (!session)
		return 0;
	struct task_struct *task = (struct task_struct *)ctx[0];
	struct linux_binprm *bprm = (struct linux_binprm *)ctx[2];
	struct bpf_pidns_info ns;

	if (!in_env(&ns))
		return 0;
	__u8 *buf = scratch_buf();
	if (!buf) {
		count_lost();
		return 0;
	}
	struct trace_exec *e = (struct trace_exec *)buf;
	__u8 *fn = buf + sizeof(struct trace_exec);
	__u32 flags = 0;

	long n = bpf_probe_read_kernel_str(fn, TRACE_MAX_STR, BPF_CORE_READ(bprm, filename));
	if (n <= 0) {
		fn[0] = 0;
		n = 1;
	}
	__u32 fn_len = (__u32)n;
	if (fn_len > TRACE_MAX_STR)
		fn_len = TRACE_MAX_STR;

	unsigned long start = BPF_CORE_READ(task, mm, arg_start);
	unsigned long stop = BPF_CORE_READ(task, mm, arg_end);
	__u32 argv_len = 0;
	if (stop > start) {
		unsigned long want = stop - start;
		if (want > TRACE_MAX_ARGV) {
			want = TRACE_MAX_ARGV;
			flags |= 1;
		}
		argv_len = (__u32)want;
	}
	__u8 *argv = fn + fn_len;
	if (argv_len && bpf_probe_read_user(argv, argv_len, (const void *)start) < 0)
		argv_len = 0;
	/* keep the last string terminated when argv was cut short */
	if (argv_len)
		argv[(argv_len - 1) & (TRACE_MAX_ARGV - 1)] = 0;

	struct count_ctx cc = {.argv = argv, .len = argv_len};
	bpf_loop(argv_len, count_nul, &cc, 0);

	fill_exec_path(bprm, fn, fn_len);

	__u32 end = sizeof(struct trace_exec) + fn_len + argv_len;
	__u32 len = TRACE_ALIGN(end);
	fill_header(&e->h, TR_EXEC, len, &ns, flags, bpf_ktime_get_ns());
	e->filename_len = fn_len;
	e->argv_len = argv_len;
	e->argc = cc.argc;
	*(__u64 *)(buf + end) = 0;
	emit(buf, len);
	return 0;
}

/* Fires in the exiting task, after exit_code is set and after the thread
 * group's live count was dropped. */
SEC("tp_btf/sched_process_exit")
int sched_process_exit(__u64 *ctx)
{
	if (!session)
		return 0;
	struct task_struct *task = (struct task_struct *)ctx[0];
	struct bpf_pidns_info ns;
	bool group_dead;

	if (!in_env(&ns))
		return 0;
	/* Recent kernels (6.18 has it) pass group_dead to the tracepoint. On older
	 * ones live == 0 is the best guess: it is also true for threads that die
	 * together with the last one (exit_group). */
	if (bpf_core_field_exists(struct trace_event_raw_sched_process_exit, group_dead))
		group_dead = (__u8)ctx[1] != 0;
	else
		group_dead = BPF_CORE_READ(task, signal, live.counter) == 0;

	struct trace_exit x = {};
	fill_header(&x.h, TR_EXIT, sizeof(x), &ns, group_dead ? 1 : 0, bpf_ktime_get_ns());
	x.status = BPF_CORE_READ(task, exit_code);
	emit(&x, sizeof(x));
	return 0;
}
