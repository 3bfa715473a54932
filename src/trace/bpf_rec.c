/* The eBPF syscall recorder, user side: loads the embedded BPF object
 * (src/trace/bpf/sbx_trace.bpf.c) with the pid namespace to record, attaches
 * its five BTF tracepoint programs and drains the ring buffer into the trace
 * stream from one thread.
 *
 * The BPF side submits records without waking anyone (BPF_RB_NO_WAKEUP), so
 * a traced syscall costs no wakeup; the drain thread polls every DRAIN_MS
 * instead. Drops are counted in the kernel (a per-CPU counter, plus the
 * programs' recursion_misses) and written as TR_LOST records after each
 * drain pass, so a reader sees roughly where the gap is.
 *
 * Loaded once, used many times: verifying and loading the programs costs
 * ~90 ms, and attaching the first syscall tracepoint program up to ~10 ms
 * (the kernel patches the tracepoint in, or waits for an RCU grace period
 * when other tracers come and go). bpf_rec_stop switches recording off
 * (`session` 0 in the program's .bss, written through its mmap: the programs
 * return at once) and keeps the loaded, still attached object in a one-slot
 * cache of this process (the supervisor, for the environment's life). The
 * next bpf_rec_start for the same namespace and ring size takes it from
 * there, discards what an earlier recording left in the ring, zeroes the
 * drop counter and switches recording on with a new session number. A
 * recorder nobody took for LINGER_MS is detached by the linger thread (idle
 * programs still cost every syscall of the host a few tens of ns); it stays
 * loaded and is attached again by the next start.
 * Stashes of tasks that lived through several recordings carry their
 * namespace ids over (they never change); an entry stashed in an earlier
 * recording is never completed in a later one (the program checks the
 * session).
 *
 * Ownership: the bpf_rec owns the BPF object (maps, programs), the links, the
 * ring buffer (an epoll fd), an eventfd and the thread; bpf_rec_free releases
 * all of them in every state start can fail in, rec_cache_put keeps them for
 * the next recording. out_fd stays the caller's. */
#include "trace/bpf_rec.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "trace/bpf/sbx_trace_cfg.h"
#include "trace/trace_format.h"
#include "trace/trace_sys.h"
#include "util/log.h"

_Static_assert(SBX_TRACE_NR_MAX == TRACE_NR_MAX, "sbx_trace_cfg.h and trace_sys.h disagree on TRACE_NR_MAX");

#if defined(__x86_64__)
#define REC_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define REC_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "the BPF recorder supports x86_64 and arm64"
#endif

/* sbx_trace.bpf.o, embedded by src/trace/bpf/sbx_trace_obj.S. */
extern const unsigned char sbx_trace_bpf_obj[], sbx_trace_bpf_obj_end[];

#define DRAIN_MS 10
/* After detaching, how long a program that was already running on another
 * CPU may still take to submit its record (they run for microseconds with
 * preemption off). The traced command's own records are all in the ring by
 * then anyway: its tasks submitted them before they exited. */
#define STOP_GRACE_MS 1
/* How long a stopped recorder stays attached, waiting for the next recording. */
#define LINGER_MS 2000
#define OUT_BUF_SIZE (256 * 1024)

/* Attach order: the process tree and the exit hook are live before the first
 * entry is stashed, so every stashed syscall can be completed. */
static const char *const rec_progs[] = {"sched_process_fork", "sched_process_exec", "sched_process_exit",
					"sys_exit", "sys_enter"};

struct bpf_rec {
	/* what the loaded object is for (the cache's key) */
	uint64_t pidns_dev, pidns_ino;
	uint32_t rb_bytes;
	volatile struct sbx_trace_state *state; /* the program's .bss, mmaped (state_len bytes) */
	size_t state_len;
	uint64_t misses_base; /* recursion_misses when this recording started */
	bool discard;	      /* drop samples: leftovers of an earlier recording */
	uint64_t idle_since;  /* CLOCK_MONOTONIC ns when it was last stopped */
	struct bpf_object *obj;
	struct bpf_link *links[ARRAY_SIZE(rec_progs)];
	struct ring_buffer *rb;
	int lost_fd; /* the per-CPU drop counter (a map fd owned by obj) */
	int ncpus;
	uint64_t *lost_vals;  /* ncpus slots to read it into */
	uint64_t lost_kernel; /* its last sum */
	uint64_t lost_bad;    /* malformed samples, counted as lost too */
	uint64_t lost_seen;   /* drops already reported in TR_LOST records */
	int out_fd;
	int stop_fd; /* eventfd: tells the drain thread to return */
	pthread_t thread;
	bool thread_running;
	/* The writer: used by bpf_rec_start for the header, then only by the
	 * drain thread; bpf_rec_stop reads the results after the join. */
	char *buf;
	size_t buf_len;
	int write_errno; /* first failed write; later output is discarded */
	uint64_t records, bytes;
};

static int rec_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static int rec_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!log_debug_enabled || level == LIBBPF_DEBUG)
		return 0;
	char line[1024];
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n < 0)
		return 0;
	size_t len = strlen(line);
	while (len > 0 && line[len - 1] == '\n')
		line[--len] = '\0';
	log_debug("libbpf: %s", line);
	return 0;
}

/* libbpf prints warnings (verifier logs included) to stderr unless told
 * otherwise; the library never prints, so they go to the debug log. */
static void rec_libbpf_setup(void)
{
	libbpf_set_print(rec_libbpf_print);
}
static pthread_once_t rec_libbpf_once = PTHREAD_ONCE_INIT;

static void rec_flush(bpf_rec *r)
{
	size_t off = 0;
	while (off < r->buf_len && !r->write_errno) {
		ssize_t n = write(r->out_fd, r->buf + off, r->buf_len - off);
		if (n >= 0) {
			off += (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			struct pollfd p = {.fd = r->out_fd, .events = POLLOUT};
			(void)poll(&p, 1, -1);
			continue;
		}
		r->write_errno = errno;
	}
	r->buf_len = 0;
}

static void rec_append(bpf_rec *r, const void *data, size_t len)
{
	if (r->buf_len + len > OUT_BUF_SIZE)
		rec_flush(r);
	memcpy(r->buf + r->buf_len, data, len);
	r->buf_len += len;
	r->bytes += len;
}

static int rec_on_sample(void *ctx, void *data, size_t size)
{
	bpf_rec *r = ctx;
	const struct trace_rec *h = data;

	if (r->discard)
		return 0;
	/* The program sizes each sample to its h.len; anything else would
	 * desynchronise the stream, so it is counted as lost instead. */
	if (size < sizeof(*h) || h->len != size || size % 8) {
		r->lost_bad++;
		return 0;
	}
	rec_append(r, data, size);
	r->records++;
	return 0;
}

static uint64_t rec_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Drops counted by the programs so far (summed over CPUs). On a failed read
 * the last sum stands; the next pass catches up. */
static uint64_t rec_lost_in_kernel(bpf_rec *r)
{
	uint32_t zero = 0;
	if (bpf_map_lookup_elem(r->lost_fd, &zero, r->lost_vals) == 0) {
		uint64_t sum = 0;
		for (int i = 0; i < r->ncpus; i++)
			sum += r->lost_vals[i];
		r->lost_kernel = sum;
	}
	return r->lost_kernel;
}

/* Invocations the kernel skipped because the program was already running on
 * that CPU: those syscalls never reached the program, so they are losses too.
 * Read once, at stop. */
static uint64_t rec_recursion_misses(bpf_rec *r)
{
	uint64_t sum = 0;
	struct bpf_program *p;
	bpf_object__for_each_program(p, r->obj)
	{
		struct bpf_prog_info info = {};
		uint32_t len = sizeof(info);
		if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len) == 0)
			sum += info.recursion_misses;
	}
	return sum;
}

/* One drain pass: everything in the ring, then a TR_LOST for new drops. */
static void rec_pass(bpf_rec *r, uint64_t extra_lost)
{
	(void)ring_buffer__consume(r->rb);
	uint64_t lost = rec_lost_in_kernel(r) + r->lost_bad + extra_lost;
	if (lost > r->lost_seen) {
		struct trace_lost l = {
		    .h = {.type = TR_LOST, .len = sizeof(l), .ts_ns = rec_now_ns()},
		    .count = lost - r->lost_seen,
		};
		rec_append(r, &l, sizeof(l));
		r->lost_seen = lost;
	}
	rec_flush(r);
}

/* Drains every DRAIN_MS until told to stop (bpf_rec_stop detaches the
 * programs before it tells), then makes a last pass that also counts the
 * recursion misses. Every write after the header happens here, with all
 * signals blocked: a reader that went away means EPIPE for this thread, not
 * SIGPIPE for the process. */
static void *rec_drain_main(void *arg)
{
	bpf_rec *r = arg;
	struct pollfd p = {.fd = r->stop_fd, .events = POLLIN};
	while (poll(&p, 1, DRAIN_MS) <= 0)
		rec_pass(r, 0);
	rec_pass(r, rec_recursion_misses(r) - r->misses_base);
	return NULL;
}

static void rec_detach(bpf_rec *r)
{
	for (size_t i = 0; i < ARRAY_SIZE(r->links); i++) {
		bpf_link__destroy(r->links[i]);
		r->links[i] = NULL;
	}
}

static void rec_stop_thread(bpf_rec *r)
{
	if (!r->thread_running)
		return;
	(void)eventfd_write(r->stop_fd, 1);
	pthread_join(r->thread, NULL);
	r->thread_running = false;
}

static void bpf_rec_free(bpf_rec *r)
{
	if (!r)
		return;
	rec_detach(r);
	rec_stop_thread(r);
	ring_buffer__free(r->rb);
	if (r->state)
		munmap((void *)r->state, r->state_len);
	bpf_object__close(r->obj);
	safe_close(r->stop_fd);
	free(r->lost_vals);
	free(r->buf);
	free(r);
}
static inline void bpf_rec_freep(bpf_rec **r)
{
	bpf_rec_free(*r);
}
#define _cleanup_bpf_rec_ _cleanup_(bpf_rec_freep)

/* The one loaded, stopped recorder this process keeps (NULL if none), and
 * the thread that detaches it once it idled for LINGER_MS. */
static pthread_mutex_t rec_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rec_cache_cond;
static bpf_rec *rec_cache;
static bool rec_linger_running;
static uint32_t rec_session_seq;

static bool rec_attached(const bpf_rec *r)
{
	for (size_t i = 0; i < ARRAY_SIZE(r->links); i++)
		if (r->links[i])
			return true;
	return false;
}

static void *rec_linger_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&rec_cache_lock);
	for (;;) {
		if (!rec_cache || !rec_attached(rec_cache)) {
			pthread_cond_wait(&rec_cache_cond, &rec_cache_lock);
			continue;
		}
		uint64_t due = rec_cache->idle_since + (uint64_t)LINGER_MS * 1000000u, now = rec_now_ns();
		if (now >= due) {
			rec_detach(rec_cache);
			continue;
		}
		struct timespec ts = {.tv_sec = (time_t)(due / 1000000000u),
				      .tv_nsec = (long)(due % 1000000000u)};
		(void)pthread_cond_timedwait(&rec_cache_cond, &rec_cache_lock, &ts);
	}
	return NULL;
}

/* Under rec_cache_lock. Without the thread (it could not be started) a
 * stopped recorder is detached at once. */
static bool rec_linger_start(void)
{
	if (rec_linger_running)
		return true;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rec_cache_cond, &ca);
	pthread_condattr_destroy(&ca);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	int k = pthread_create(&t, NULL, rec_linger_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (k != 0)
		return false;
	pthread_detach(t);
	rec_linger_running = true;
	return true;
}

/* The cached recorder if it was loaded for this namespace and ring size; a
 * cached one for another is freed (a supervisor records one namespace). */
static bpf_rec *rec_cache_take(uint64_t pidns_dev, uint64_t pidns_ino, uint32_t rb_bytes)
{
	pthread_mutex_lock(&rec_cache_lock);
	bpf_rec *r = TAKE_PTR(rec_cache);
	pthread_mutex_unlock(&rec_cache_lock);
	if (r && (r->pidns_dev != pidns_dev || r->pidns_ino != pidns_ino || r->rb_bytes != rb_bytes)) {
		bpf_rec_free(r);
		r = NULL;
	}
	return r;
}

/* Keeps a stopped recorder (session 0, its thread stopped, maybe still
 * attached) for the next start, or frees it when the slot is taken. */
static void rec_cache_put(bpf_rec *r)
{
	r->out_fd = -1;
	r->idle_since = rec_now_ns();
	pthread_mutex_lock(&rec_cache_lock);
	if (!rec_cache) {
		if (!rec_linger_start())
			rec_detach(r);
		rec_cache = TAKE_PTR(r);
		pthread_cond_signal(&rec_cache_cond);
	}
	pthread_mutex_unlock(&rec_cache_lock);
	bpf_rec_free(r);
}

bool bpf_rec_available(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) < 0)
		return false;

	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {0};
	if (syscall(SYS_capget, &hdr, data) < 0)
		return false;
	uint64_t eff = (uint64_t)data[1].effective << 32 | data[0].effective;
#define HAS(c) (eff & (UINT64_C(1) << (c)))
	if (!(HAS(CAP_BPF) && HAS(CAP_PERFMON)) && !HAS(CAP_SYS_ADMIN))
		return false;
#undef HAS

	/* bpf(2) may still be refused (a seccomp filter, lockdown): create a
	 * map of the kind the recorder needs and see. */
	pthread_once(&rec_libbpf_once, rec_libbpf_setup);
	return libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1 &&
	       libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
}

/* The ring buffer size: 16 MiB, or SBX_TRACE_RINGBUF_BYTES (a test knob). */
static int rec_ringbuf_bytes(uint32_t *ret, sbx_err **err)
{
	const char *e = getenv("SBX_TRACE_RINGBUF_BYTES");
	if (!e || !*e) {
		*ret = SBX_TRACE_RINGBUF_DEFAULT;
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(e, &end, 10);
	long page = sysconf(_SC_PAGESIZE);
	if (errno || *end || v < (unsigned long long)page || v > (1ull << 30) || (v & (v - 1)))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "SBX_TRACE_RINGBUF_BYTES=%s: want a power of two from the page size to 1 GiB",
			       e);
	*ret = (uint32_t)v;
	return 0;
}

static int rec_load(bpf_rec *r, uint64_t pidns_dev, uint64_t pidns_ino, uint32_t rb_bytes, sbx_err **err)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "sbx_trace");
	r->obj = bpf_object__open_mem(sbx_trace_bpf_obj, (size_t)(sbx_trace_bpf_obj_end - sbx_trace_bpf_obj),
				      &opts);
	if (!r->obj)
		return err_errno(err, "open the BPF object");

	/* bpf_get_ns_current_pid_tgid compares the kernel's dev_t encoding,
	 * not the one stat(2) reports. */
	struct sbx_trace_cfg cfg = {
	    .pidns_dev = (uint64_t)major(pidns_dev) << 20 | minor(pidns_dev),
	    .pidns_ino = pidns_ino,
	    .nr_exit = SYS_exit,
	    .nr_exit_group = SYS_exit_group,
	};
	for (int nr = 0; nr < TRACE_NR_MAX; nr++)
		cfg.str_args[nr] = trace_sys_str_args(nr);

	struct bpf_map *rodata = bpf_object__find_map_by_name(r->obj, ".rodata");
	struct bpf_map *bss = bpf_object__find_map_by_name(r->obj, ".bss");
	struct bpf_map *events = bpf_object__find_map_by_name(r->obj, "events");
	struct bpf_map *lost = bpf_object__find_map_by_name(r->obj, "lost");
	if (!rodata || !bss || !events || !lost)
		return err_set(err, SBX_E_INTERNAL, 0, "the BPF object lacks its maps");
	int k = bpf_map__set_initial_value(rodata, &cfg, sizeof(cfg));
	if (k < 0)
		return err_errnum(err, k, "set the BPF configuration");
	k = bpf_map__set_max_entries(events, rb_bytes);
	if (k < 0)
		return err_errnum(err, k, "size the ring buffer");

	k = bpf_object__load(r->obj);
	if (k < 0)
		return err_errnum(err, k, "load the BPF programs (SBX_DEBUG=1 logs why)");

	/* The .bss is an mmapable array of one element; libbpf (before 1.5)
	 * maps it for skeletons only. */
	if (bpf_map__value_size(bss) < sizeof(*r->state))
		return err_set(err, SBX_E_INTERNAL, 0, "the BPF object's .bss is too small");
	r->state_len = (size_t)sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, r->state_len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(bss), 0);
	if (m == MAP_FAILED)
		return err_errno(err, "map the BPF program's state");
	r->state = m;
	r->pidns_dev = pidns_dev;
	r->pidns_ino = pidns_ino;
	r->rb_bytes = rb_bytes;
	r->lost_fd = bpf_map__fd(lost);
	r->ncpus = libbpf_num_possible_cpus();
	if (r->ncpus <= 0)
		return err_errnum(err, r->ncpus, "count possible CPUs");
	r->lost_vals = calloc((size_t)r->ncpus, sizeof(uint64_t));
	if (!r->lost_vals)
		return err_errnum(err, ENOMEM, "allocate");
	r->rb = ring_buffer__new(bpf_map__fd(events), rec_on_sample, r, NULL);
	if (!r->rb)
		return err_errno(err, "set up the ring buffer");
	return 0;
}

static int rec_start_thread(bpf_rec *r, sbx_err **err)
{
	/* Signals are the owner's business: the thread takes none, so a
	 * process-directed signal never lands here. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int k = pthread_create(&r->thread, NULL, rec_drain_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (k != 0)
		return err_errnum(err, k, "start the drain thread");
	r->thread_running = true;
	return 0;
}

/* A recorder loaded for the namespace: the cached one, or a new one. */
static int rec_get(uint64_t pidns_dev, uint64_t pidns_ino, uint32_t rb_bytes, bpf_rec **ret, sbx_err **err)
{
	bpf_rec *cached = rec_cache_take(pidns_dev, pidns_ino, rb_bytes);
	if (cached) {
		*ret = cached;
		return 0;
	}
	_cleanup_bpf_rec_ bpf_rec *r = calloc(1, sizeof(*r));
	if (!r)
		return err_errnum(err, ENOMEM, "allocate");
	r->out_fd = -1;
	r->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->stop_fd < 0)
		return err_errno(err, "eventfd");
	r->buf = malloc(OUT_BUF_SIZE);
	if (!r->buf)
		return err_errnum(err, ENOMEM, "allocate");
	int k = rec_load(r, pidns_dev, pidns_ino, rb_bytes, err);
	if (k < 0)
		return k;
	*ret = TAKE_PTR(r);
	return 0;
}

/* Readies a detached recorder for a new recording to out_fd: nothing of an
 * earlier one (records left in the ring, drop counts, the stop signal)
 * carries over. */
static int rec_reset(bpf_rec *r, int out_fd, sbx_err **err)
{
	r->discard = true;
	(void)ring_buffer__consume(r->rb);
	r->discard = false;
	eventfd_t v;
	(void)eventfd_read(r->stop_fd, &v);
	uint32_t zero = 0;
	memset(r->lost_vals, 0, (size_t)r->ncpus * sizeof(uint64_t));
	if (bpf_map_update_elem(r->lost_fd, &zero, r->lost_vals, BPF_ANY) < 0)
		return err_errno(err, "reset the drop counter");
	r->misses_base = rec_recursion_misses(r);
	r->out_fd = out_fd;
	r->buf_len = 0;
	r->write_errno = 0;
	r->records = r->bytes = 0;
	r->lost_kernel = r->lost_bad = r->lost_seen = 0;
	return 0;
}

/* Stops a recording that failed to start (session, thread) and returns the
 * recorder to the cache. */
static void rec_end(bpf_rec *r)
{
	r->state->session = 0;
	rec_stop_thread(r);
	rec_cache_put(r);
}

int bpf_rec_start(uint64_t pidns_dev, uint64_t pidns_ino, int out_fd, bpf_rec **ret, sbx_err **err)
{
	uint32_t rb_bytes = SBX_TRACE_RINGBUF_DEFAULT;
	int k;

	if (out_fd < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADF, "bpf recorder: no output fd");
	k = rec_ringbuf_bytes(&rb_bytes, err);
	if (k < 0)
		return err_wrap(err, "bpf recorder");
	pthread_once(&rec_libbpf_once, rec_libbpf_setup);

	bpf_rec *r = NULL;
	k = rec_get(pidns_dev, pidns_ino, rb_bytes, &r, err);
	if (k < 0)
		return err_wrap(err, "bpf recorder");
	k = rec_reset(r, out_fd, err);
	if (k < 0) {
		bpf_rec_free(r);
		return err_wrap(err, "bpf recorder");
	}

	struct trace_file_header h = {
	    .version = TRACE_VERSION,
	    .arch = REC_AUDIT_ARCH,
	    .start_ns = rec_now_ns(),
	    .recorder = TRACE_REC_BPF,
	};
	memcpy(h.magic, TRACE_MAGIC, sizeof(h.magic));
	rec_append(r, &h, sizeof(h));
	rec_flush(r);
	if (r->write_errno) {
		k = r->write_errno;
		rec_end(r);
		return err_errnum(err, k, "bpf recorder: write the trace header");
	}

	/* A new number: stashed entries of earlier recordings are stale. */
	uint32_t session = __atomic_add_fetch(&rec_session_seq, 1, __ATOMIC_RELAXED);
	if (session == 0)
		session = __atomic_add_fetch(&rec_session_seq, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&r->state->session, session, __ATOMIC_RELEASE);

	k = rec_start_thread(r, err);
	if (k < 0) {
		rec_end(r);
		return err_wrap(err, "bpf recorder");
	}
	for (size_t i = 0; i < ARRAY_SIZE(rec_progs); i++) {
		if (r->links[i])
			continue; /* still attached from the last recording */
		struct bpf_program *p = bpf_object__find_program_by_name(r->obj, rec_progs[i]);
		if (!p) {
			rec_end(r);
			return err_set(err, SBX_E_INTERNAL, 0, "bpf recorder: no program '%s'", rec_progs[i]);
		}
		r->links[i] = bpf_program__attach(p);
		if (!r->links[i]) {
			k = -errno;
			rec_end(r);
			return err_errnum(err, k, "bpf recorder: attach '%s'", rec_progs[i]);
		}
	}
	log_debug("bpf recorder: recording pid namespace %llu:%llu (ring buffer %u bytes, session %u)",
		  (unsigned long long)pidns_dev, (unsigned long long)pidns_ino, rb_bytes, session);
	*ret = r;
	return 0;
}

int bpf_rec_stop(bpf_rec *r, bpf_rec_stats *ret_stats, sbx_err **err)
{
	if (!r)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "bpf recorder: not running");
	/* Off: the programs return at once from now on. One already past that
	 * check on another CPU finishes within microseconds (they run with
	 * preemption off); what it submits later stays in the ring, and the
	 * next recording discards it. */
	__atomic_store_n(&r->state->session, 0, __ATOMIC_RELEASE);
	struct timespec grace = {.tv_nsec = STOP_GRACE_MS * 1000000L};
	while (nanosleep(&grace, &grace) < 0 && errno == EINTR)
		;
	rec_stop_thread(r);
	int werr = r->write_errno;
	bpf_rec_stats st = {.records = r->records, .lost = r->lost_seen, .bytes = r->bytes};
	log_debug("bpf recorder: %llu records, %llu lost, %llu bytes", (unsigned long long)st.records,
		  (unsigned long long)st.lost, (unsigned long long)st.bytes);
	rec_cache_put(r);
	if (werr)
		return err_errnum(err, werr, "bpf recorder: write the trace");
	if (ret_stats)
		*ret_stats = st;
	return 0;
}
