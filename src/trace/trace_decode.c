/* Decoding trace records for display (trace_view.h): names, the TR_EXIT
 * and argv forms, flag names, the per-syscall signatures, and one call's
 * arguments and result as text. Pure. The shared helpers here are used by
 * show, stats, Chrome export and the normalized view. */
#include "trace/trace_decode.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "trace/trace_sys.h"
#include "util/err.h"
#include "util/json.h"

/* ---- names ------------------------------------------------------------------ */

const char *trace_determ_kind_name(uint32_t kind)
{
	static const char *const names[] = {NULL,	 "clock",  "random",	  "rdtsc",  "uname",
					    "stat time", "getcpu", "concurrency", "procfs", "inode"};
	return kind < ARRAY_SIZE(names) ? names[kind] : NULL;
}

const char *trace_errno_name(int e)
{
	/* Kernel-internal values a tracer can see on syscall exit. */
	static const char *const restart[] = {"ERESTARTSYS", "ERESTARTNOINTR", "ERESTARTNOHAND",
					      "ENOIOCTLCMD", "ERESTART_RESTARTBLOCK"};
	if (e >= 512 && e < 512 + (int)ARRAY_SIZE(restart))
		return restart[e - 512];
	return e > 0 ? strerrorname_np(e) : NULL;
}

bool trace_ret_is_err(int64_t ret)
{
	return ret < 0 && ret >= -4095;
}

const char *trace_sys_label(int32_t nr, char buf[24])
{
	const char *n = trace_sys_name(nr);
	if (n)
		return n;
	snprintf(buf, 24, "syscall_%" PRId32, nr);
	return buf;
}

void trace_fmt_time(char out[32], uint64_t ts, uint64_t start)
{
	uint64_t a = ts >= start ? ts - start : start - ts;
	snprintf(out, 32, "%s%" PRIu64 ".%06" PRIu64, ts >= start ? "" : "-", a / 1000000000,
		 a % 1000000000 / 1000);
}

uint64_t trace_ev_start(const trace_ev *ev)
{
	return ev->type == TR_SYSCALL && ev->sys.enter_ns ? ev->sys.enter_ns : ev->ts_ns;
}

void trace_sb_signal(trace_sbuf *b, int64_t sig)
{
	const char *n = sig > 0 && sig < 32 ? sigabbrev_np((int)sig) : NULL;
	if (n)
		trace_sb_addf(b, "SIG%s", n);
	else if (sig >= 32 && sig <= 64)
		trace_sb_addf(b, "SIGRT_%" PRId64, sig - 32); /* kernel numbering: glibc's SIGRTMIN is 34 */
	else
		trace_sb_addf(b, "%" PRId64, sig);
}

void trace_sb_status(trace_sbuf *b, int32_t status)
{
	int sig = status & 0x7f;
	if (sig == 0)
		trace_sb_addf(b, "exited %d", (status >> 8) & 0xff);
	else if (sig != 0x7f) {
		trace_sb_lit(b, "killed by ");
		trace_sb_signal(b, sig);
		if (status & 0x80)
			trace_sb_lit(b, " (core dumped)");
	} else
		trace_sb_addf(b, "status 0x%x", (unsigned)status);
}

void trace_sb_argv(trace_sbuf *b, const trace_ev *ev)
{
	trace_sb_lit(b, "[");
	const char *p = ev->exec.argv, *end = p + ev->exec.argv_len;
	for (bool first = true; p < end; first = false) {
		size_t n = strlen(p); /* the reader made sure the last string ends in a NUL */
		if (!first)
			trace_sb_lit(b, ", ");
		trace_sb_lit(b, "\"");
		trace_sb_esc(b, p, n);
		trace_sb_lit(b, "\"");
		p += n + 1;
	}
	trace_sb_lit(b, "]");
	if (ev->flags & 1)
		trace_sb_lit(b, "...");
}

json_t *trace_json_str(const char *s)
{
	json_t *j = json_string(s);
	if (j)
		return j;
	/* Not UTF-8 (paths are bytes): escape, so distinct paths stay distinct. */
	trace_sbuf b = {0};
	trace_sb_esc(&b, s, strlen(s));
	j = b.oom ? NULL : json_string(trace_sb_str(&b));
	trace_sb_free(&b);
	return j;
}

/* ---- flags ---------------------------------------------------------------------- */

typedef struct flag {
	uint64_t v;
	const char *n;
} flag;

/* Multi-bit flags come before the single bits they contain (O_SYNC holds
 * O_DSYNC, O_TMPFILE holds O_DIRECTORY). */
static const flag open_flags[] = {
    {O_CREAT, "O_CREAT"},
    {O_EXCL, "O_EXCL"},
    {O_NOCTTY, "O_NOCTTY"},
    {O_TRUNC, "O_TRUNC"},
    {O_APPEND, "O_APPEND"},
    {O_NONBLOCK, "O_NONBLOCK"},
    {O_SYNC, "O_SYNC"},
    {O_DSYNC, "O_DSYNC"},
    {O_ASYNC, "O_ASYNC"},
    {O_DIRECT, "O_DIRECT"},
    {KO_LARGEFILE, "O_LARGEFILE"},
    {O_TMPFILE, "O_TMPFILE"},
    {O_DIRECTORY, "O_DIRECTORY"},
    {O_NOFOLLOW, "O_NOFOLLOW"},
    {O_NOATIME, "O_NOATIME"},
    {O_CLOEXEC, "O_CLOEXEC"},
    {O_PATH, "O_PATH"},
};
static const flag prot_flags[] = {
    {PROT_READ, "PROT_READ"},		{PROT_WRITE, "PROT_WRITE"},	{PROT_EXEC, "PROT_EXEC"},
    {PROT_GROWSDOWN, "PROT_GROWSDOWN"}, {PROT_GROWSUP, "PROT_GROWSUP"},
};
static const flag map_flags[] = {
    {MAP_FIXED, "MAP_FIXED"},		{MAP_ANONYMOUS, "MAP_ANONYMOUS"},
#ifdef MAP_32BIT
    {MAP_32BIT, "MAP_32BIT"},
#endif
    {MAP_GROWSDOWN, "MAP_GROWSDOWN"},	{MAP_DENYWRITE, "MAP_DENYWRITE"},
    {MAP_EXECUTABLE, "MAP_EXECUTABLE"}, {MAP_LOCKED, "MAP_LOCKED"},
    {MAP_NORESERVE, "MAP_NORESERVE"},	{MAP_POPULATE, "MAP_POPULATE"},
    {MAP_NONBLOCK, "MAP_NONBLOCK"},	{MAP_STACK, "MAP_STACK"},
    {MAP_HUGETLB, "MAP_HUGETLB"},	{0x80000, "MAP_SYNC"},
    {0x100000, "MAP_FIXED_NOREPLACE"},
};
#define NS_FLAGS                                                                                             \
	{CLONE_NEWNS, "CLONE_NEWNS"}, {CLONE_NEWCGROUP, "CLONE_NEWCGROUP"}, {CLONE_NEWUTS, "CLONE_NEWUTS"},  \
	    {CLONE_NEWIPC, "CLONE_NEWIPC"}, {CLONE_NEWUSER, "CLONE_NEWUSER"},                                \
	    {CLONE_NEWPID, "CLONE_NEWPID"},                                                                  \
	{                                                                                                    \
		CLONE_NEWNET, "CLONE_NEWNET"                                                                 \
	}
static const flag clone_flags[] = {
    {CLONE_VM, "CLONE_VM"},
    {CLONE_FS, "CLONE_FS"},
    {CLONE_FILES, "CLONE_FILES"},
    {CLONE_SIGHAND, "CLONE_SIGHAND"},
    {CLONE_PIDFD, "CLONE_PIDFD"},
    {CLONE_PTRACE, "CLONE_PTRACE"},
    {CLONE_VFORK, "CLONE_VFORK"},
    {CLONE_PARENT, "CLONE_PARENT"},
    {CLONE_THREAD, "CLONE_THREAD"},
    {CLONE_SYSVSEM, "CLONE_SYSVSEM"},
    {CLONE_SETTLS, "CLONE_SETTLS"},
    {CLONE_PARENT_SETTID, "CLONE_PARENT_SETTID"},
    {CLONE_CHILD_CLEARTID, "CLONE_CHILD_CLEARTID"},
    {CLONE_DETACHED, "CLONE_DETACHED"},
    {CLONE_UNTRACED, "CLONE_UNTRACED"},
    {CLONE_CHILD_SETTID, "CLONE_CHILD_SETTID"},
    {CLONE_IO, "CLONE_IO"},
    NS_FLAGS,
};
static const flag unshare_flags[] = {
    {CLONE_FILES, "CLONE_FILES"},     {CLONE_FS, "CLONE_FS"},
    {CLONE_SYSVSEM, "CLONE_SYSVSEM"}, {CLONE_VM, "CLONE_VM"},
    {CLONE_SIGHAND, "CLONE_SIGHAND"}, {CLONE_THREAD, "CLONE_THREAD"},
    {0x80, "CLONE_NEWTIME"},	      NS_FLAGS,
};
static const flag at_flags[] = {
    {AT_SYMLINK_NOFOLLOW, "AT_SYMLINK_NOFOLLOW"},
    {AT_SYMLINK_FOLLOW, "AT_SYMLINK_FOLLOW"},
    {AT_NO_AUTOMOUNT, "AT_NO_AUTOMOUNT"},
    {AT_EMPTY_PATH, "AT_EMPTY_PATH"},
    {0x2000, "AT_STATX_FORCE_SYNC"},
    {0x4000, "AT_STATX_DONT_SYNC"},
    {0x8000, "AT_RECURSIVE"},
};
static const flag at_remove[] = {{AT_REMOVEDIR, "AT_REMOVEDIR"}};
static const flag at_eaccess[] = {{AT_EACCESS, "AT_EACCESS"},
				  {AT_SYMLINK_NOFOLLOW, "AT_SYMLINK_NOFOLLOW"},
				  {AT_EMPTY_PATH, "AT_EMPTY_PATH"}};
static const flag access_flags[] = {{R_OK, "R_OK"}, {W_OK, "W_OK"}, {X_OK, "X_OK"}};
static const flag sock_flags[] = {{SOCK_NONBLOCK, "SOCK_NONBLOCK"}, {SOCK_CLOEXEC, "SOCK_CLOEXEC"}};
static const flag fd_flags[] = {{FD_CLOEXEC, "FD_CLOEXEC"}};

/* Exact values. */
static const flag whence_names[] = {{SEEK_SET, "SEEK_SET"},
				    {SEEK_CUR, "SEEK_CUR"},
				    {SEEK_END, "SEEK_END"},
				    {SEEK_DATA, "SEEK_DATA"},
				    {SEEK_HOLE, "SEEK_HOLE"}};
static const flag af_names[] = {
    {AF_UNSPEC, "AF_UNSPEC"},	    {AF_UNIX, "AF_UNIX"},	{AF_INET, "AF_INET"},
    {AF_INET6, "AF_INET6"},	    {AF_NETLINK, "AF_NETLINK"}, {AF_PACKET, "AF_PACKET"},
    {AF_BLUETOOTH, "AF_BLUETOOTH"}, {AF_ALG, "AF_ALG"},		{AF_VSOCK, "AF_VSOCK"}};
static const flag socktype_names[] = {
    {SOCK_STREAM, "SOCK_STREAM"}, {SOCK_DGRAM, "SOCK_DGRAM"},	      {SOCK_RAW, "SOCK_RAW"},
    {SOCK_RDM, "SOCK_RDM"},	  {SOCK_SEQPACKET, "SOCK_SEQPACKET"}, {SOCK_DCCP, "SOCK_DCCP"},
    {SOCK_PACKET, "SOCK_PACKET"}};
static const flag fcntl_names[] = {
    {F_DUPFD, "F_DUPFD"},	    {F_GETFD, "F_GETFD"},	    {F_SETFD, "F_SETFD"},
    {F_GETFL, "F_GETFL"},	    {F_SETFL, "F_SETFL"},	    {F_GETLK, "F_GETLK"},
    {F_SETLK, "F_SETLK"},	    {F_SETLKW, "F_SETLKW"},	    {F_SETOWN, "F_SETOWN"},
    {F_GETOWN, "F_GETOWN"},	    {F_SETSIG, "F_SETSIG"},	    {F_GETSIG, "F_GETSIG"},
    {F_SETOWN_EX, "F_SETOWN_EX"},   {F_GETOWN_EX, "F_GETOWN_EX"},   {F_OFD_GETLK, "F_OFD_GETLK"},
    {F_OFD_SETLK, "F_OFD_SETLK"},   {F_OFD_SETLKW, "F_OFD_SETLKW"}, {F_SETLEASE, "F_SETLEASE"},
    {F_GETLEASE, "F_GETLEASE"},	    {F_NOTIFY, "F_NOTIFY"},	    {F_DUPFD_CLOEXEC, "F_DUPFD_CLOEXEC"},
    {F_SETPIPE_SZ, "F_SETPIPE_SZ"}, {F_GETPIPE_SZ, "F_GETPIPE_SZ"}, {F_ADD_SEALS, "F_ADD_SEALS"},
    {F_GET_SEALS, "F_GET_SEALS"},
};
static const flag how_names[] = {
    {SIG_BLOCK, "SIG_BLOCK"}, {SIG_UNBLOCK, "SIG_UNBLOCK"}, {SIG_SETMASK, "SIG_SETMASK"}};

static void sb_flags(trace_sbuf *b, uint64_t v, const flag *t, size_t n, bool first)
{
	for (size_t i = 0; i < n; i++) {
		if (!t[i].v || (v & t[i].v) != t[i].v)
			continue;
		if (!first)
			trace_sb_lit(b, "|");
		trace_sb_addf(b, "%s", t[i].n);
		v &= ~t[i].v;
		first = false;
	}
	if (v)
		trace_sb_addf(b, "%s%#" PRIx64, first ? "" : "|", v);
	else if (first)
		trace_sb_lit(b, "0");
}

static void sb_enum(trace_sbuf *b, int64_t v, const flag *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((int64_t)t[i].v == v) {
			trace_sb_addf(b, "%s", t[i].n);
			return;
		}
	trace_sb_addf(b, "%" PRId64, v);
}

void trace_sb_socket(trace_sbuf *b, int64_t domain, int64_t type)
{
	sb_enum(b, domain, af_names, ARRAY_SIZE(af_names));
	trace_sb_lit(b, ",");
	sb_enum(b, type, socktype_names, ARRAY_SIZE(socktype_names));
}

static void sb_open_flags(trace_sbuf *b, uint64_t v)
{
	v &= 0xffffffffu;
	static const char *const acc[] = {"O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE"};
	trace_sb_addf(b, "%s", acc[v & O_ACCMODE]);
	sb_flags(b, v & ~(uint64_t)O_ACCMODE, open_flags, ARRAY_SIZE(open_flags), false);
}

/* ---- the syscall table ------------------------------------------------------------- */

int trace_str_arg_index(int32_t nr, int k)
{
	uint8_t m = trace_sys_str_args(nr);
	for (int i = 0; i < 6; i++)
		if (m & (1u << i) && k-- == 0)
			return i;
	return -1;
}

/* ---- decoding a syscall ----------------------------------------------------------------- */

static void sb_hex(trace_sbuf *b, uint64_t v)
{
	if (v)
		trace_sb_addf(b, "%#" PRIx64, v);
	else
		trace_sb_lit(b, "NULL");
}

static void sb_fd(trace_sbuf *b, const trace_state *st, uint32_t pid, uint64_t v)
{
	int32_t fd = (int32_t)v;
	if (fd == AT_FDCWD) {
		trace_sb_lit(b, "AT_FDCWD");
		return;
	}
	trace_sb_addf(b, "%" PRId32, fd);
	const trace_fd *f = trace_state_fd(st, pid, fd);
	if (f) {
		trace_sb_lit(b, "<");
		trace_sb_esc(b, f->path, strlen(f->path));
		trace_sb_lit(b, ">");
	}
}

static void sb_str_arg(trace_sbuf *b, const trace_ev *ev, int k, uint64_t ptr)
{
	uint32_t fault = k ? TRS_STR1_FAULT : TRS_STR0_FAULT, trunc = k ? TRS_STR1_TRUNC : TRS_STR0_TRUNC;
	const char *s = ev->sys.str[k];
	if (!s || (ev->flags & fault)) {
		sb_hex(b, ptr);
		return;
	}
	trace_sb_lit(b, "\"");
	trace_sb_esc(b, s, strlen(s));
	trace_sb_lit(b, "\"");
	if (ev->flags & trunc)
		trace_sb_lit(b, "...");
}

/* One non-string, non-descriptor argument by its letter. */
static void sb_arg(trace_sbuf *b, char c, uint64_t v)
{
	switch (c) {
	case 'd':
		trace_sb_addf(b, "%" PRId32, (int32_t)v);
		break;
	case 'l':
		trace_sb_addf(b, "%" PRId64, (int64_t)v);
		break;
	case 'u':
		trace_sb_addf(b, "%" PRIu64, v);
		break;
	case 'o':
		sb_open_flags(b, v);
		break;
	case 'F':
		sb_flags(b, v & 0xffffffffu, open_flags, ARRAY_SIZE(open_flags), true);
		break;
	case 'm':
		trace_sb_addf(b, "%#03o", (unsigned)(v & 07777777));
		break;
	case 'a':
		if ((v & 7) == F_OK)
			trace_sb_lit(b, "F_OK");
		else
			sb_flags(b, v & 0xffffffffu, access_flags, ARRAY_SIZE(access_flags), true);
		break;
	case 'P':
		if (!v)
			trace_sb_lit(b, "PROT_NONE");
		else
			sb_flags(b, v, prot_flags, ARRAY_SIZE(prot_flags), true);
		break;
	case 'M': {
		static const char *const types[] = {"0", "MAP_SHARED", "MAP_PRIVATE", "MAP_SHARED_VALIDATE"};
		uint64_t t = v & 0xf;
		if (t < 4)
			trace_sb_addf(b, "%s", types[t]);
		else
			trace_sb_addf(b, "%#" PRIx64, t);
		if (v & ~(uint64_t)0xf) {
			trace_sb_lit(b, "|");
			sb_flags(b, v & ~(uint64_t)0xf, map_flags, ARRAY_SIZE(map_flags), true);
		}
		break;
	}
	case 'c': {
		/* clone(): the low byte is the exit signal, not a flag */
		uint64_t fl = v & ~(uint64_t)0xff, sig = v & 0xff;
		if (fl || !sig)
			sb_flags(b, fl, clone_flags, ARRAY_SIZE(clone_flags), true);
		if (sig) {
			if (fl)
				trace_sb_lit(b, "|");
			trace_sb_signal(b, sig);
		}
		break;
	}
	case 'U':
		sb_flags(b, v & 0xffffffffu, unshare_flags, ARRAY_SIZE(unshare_flags), true);
		break;
	case 'A':
		sb_flags(b, v & 0xffffffffu, at_flags, ARRAY_SIZE(at_flags), true);
		break;
	case 'R':
		sb_flags(b, v & 0xffffffffu, at_remove, ARRAY_SIZE(at_remove), true);
		break;
	case 'E':
		sb_flags(b, v & 0xffffffffu, at_eaccess, ARRAY_SIZE(at_eaccess), true);
		break;
	case 'w':
		sb_enum(b, (int32_t)v, whence_names, ARRAY_SIZE(whence_names));
		break;
	case 'S':
		trace_sb_signal(b, (int32_t)v);
		break;
	case 'h':
		sb_enum(b, (int32_t)v, how_names, ARRAY_SIZE(how_names));
		break;
	case 'k':
		sb_enum(b, (int32_t)v, af_names, ARRAY_SIZE(af_names));
		break;
	case 't':
		sb_enum(b, (int32_t)v & 0xf, socktype_names, ARRAY_SIZE(socktype_names));
		if (v & ~(uint64_t)0xf & 0xffffffffu) {
			trace_sb_lit(b, "|");
			sb_flags(b, v & ~(uint64_t)0xf & 0xffffffffu, sock_flags, ARRAY_SIZE(sock_flags),
				 true);
		}
		break;
	case 'T':
		sb_flags(b, v & 0xffffffffu, sock_flags, ARRAY_SIZE(sock_flags), true);
		break;
	case 'X':
		trace_sb_addf(b, "%#" PRIx64, v);
		break;
	case 'C':
		sb_enum(b, (int32_t)v, fcntl_names, ARRAY_SIZE(fcntl_names));
		break;
	default:
		sb_hex(b, v);
	}
}

static void dec_reset(trace_dec *d)
{
	for (int i = 0; i < 6; i++) {
		trace_sb_reset(&d->arg[i]);
		trace_sb_reset(&d->fdpath[i]);
		d->fdknown[i] = false;
	}
	trace_sb_reset(&d->ret);
	d->nargs = 0;
	d->ret_fd = -1;
	d->err = false;
}

void trace_dec_args(trace_dec *d, const trace_state *st, const trace_ev *ev)
{
	dec_reset(d);
	int32_t nr = ev->sys.nr;
	d->name = trace_sys_label(nr, d->namebuf);
	const trace_sysent *si = trace_sys_entry(nr);
	uint8_t sm = trace_sys_str_args(nr), fm = trace_sys_fd_args(nr);
	int n = si ? (int)strlen(si->sig) : 6;
	for (int i = n; i < 6; i++)
		if ((sm | fm) & (1u << i))
			n = i + 1; /* never hide a captured string */
	int k = 0;
	for (int i = 0; i < n && i < 6; i++) {
		trace_sbuf *b = &d->arg[i];
		uint64_t v = ev->sys.args[i];
		char c = si && i < (int)strlen(si->sig) ? si->sig[i] : 'X';
		if (sm & (1u << i)) {
			if (k < 2)
				sb_str_arg(b, ev, k, v);
			else
				sb_hex(b, v);
			k++;
		} else if ((fm & (1u << i)) || c == 'f') {
			sb_fd(b, st, ev->pid, v);
			const trace_fd *f =
			    (int32_t)v == AT_FDCWD ? NULL : trace_state_fd(st, ev->pid, (int32_t)v);
			if (f) {
				trace_sb_add(&d->fdpath[i], f->path, strlen(f->path));
				d->fdknown[i] = true;
			}
		} else if (c == 'C' && i + 1 < 6) {
			/* fcntl: the third argument's meaning follows the command */
			int cmd = (int32_t)v;
			sb_arg(b, 'C', v);
			uint64_t v2 = ev->sys.args[i + 1];
			trace_sbuf *b2 = &d->arg[i + 1];
			i++;
			if (cmd == F_GETFD || cmd == F_GETFL || cmd == F_GETOWN || cmd == F_GETSIG ||
			    cmd == F_GETLEASE || cmd == F_GETPIPE_SZ || cmd == F_GET_SEALS) {
				n = i; /* no third argument */
				break;
			}
			if (cmd == F_SETFD)
				sb_flags(b2, v2 & 0xffffffffu, fd_flags, ARRAY_SIZE(fd_flags), true);
			else if (cmd == F_SETFL)
				sb_open_flags(b2, v2);
			else if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC || cmd == F_SETOWN ||
				 cmd == F_SETSIG || cmd == F_SETPIPE_SZ || cmd == F_NOTIFY ||
				 cmd == F_SETLEASE || cmd == F_ADD_SEALS)
				sb_arg(b2, 'd', v2);
			else
				sb_hex(b2, v2);
		} else
			sb_arg(b, c, v);
	}
	d->nargs = n < 6 ? n : 6;
	/* The mode of open/openat matters only when a file may be created (strace
	 * leaves it out otherwise; the register holds whatever was there). */
	if (si && (si->op == OP_OPEN || si->op == OP_OPENAT)) {
		int fi = si->op == OP_OPEN ? 1 : 2;
		uint64_t fl = ev->sys.args[fi];
		if (!(fl & O_CREAT) && (fl & O_TMPFILE) != O_TMPFILE && d->nargs > fi + 1)
			d->nargs = fi + 1;
	}
}

static bool returns_fd(const trace_sysent *si, const trace_ev *ev)
{
	if (!si)
		return false;
	switch (si->op) {
	case OP_NONE:
	case OP_CLOSE:
	case OP_CLOSE_RANGE:
	case OP_IOCTL:
		return false;
	case OP_FCNTL:
		return (int)ev->sys.args[1] == F_DUPFD || (int)ev->sys.args[1] == F_DUPFD_CLOEXEC;
	default:
		return true;
	}
}

void trace_dec_ret(trace_dec *d, const trace_state *st, const trace_ev *ev)
{
	trace_sb_reset(&d->ret);
	d->ret_fd = -1;
	d->err = false;
	if (!(ev->flags & TRS_HAS_RET)) {
		trace_sb_lit(&d->ret, "?");
		return;
	}
	int64_t r = ev->sys.ret;
	if (trace_ret_is_err(r)) {
		d->err = true;
		int e = (int)-r;
		const char *name = trace_errno_name(e), *desc = e < 512 ? strerrordesc_np(e) : NULL;
		if (name)
			trace_sb_addf(&d->ret, "-1 %s", name);
		else
			trace_sb_addf(&d->ret, "-1 errno %d", e);
		if (desc)
			trace_sb_addf(&d->ret, " (%s)", desc);
		return;
	}
	if (trace_sys_returns_addr(ev->sys.nr)) {
		trace_sb_addf(&d->ret, "%#" PRIx64, (uint64_t)r);
		return;
	}
	trace_sb_addf(&d->ret, "%" PRId64, r);
	if (r >= 0 && returns_fd(trace_sys_entry(ev->sys.nr), ev)) {
		d->ret_fd = r;
		const trace_fd *f = trace_state_fd(st, ev->pid, r);
		if (f) {
			trace_sb_lit(&d->ret, " <");
			trace_sb_esc(&d->ret, f->path, strlen(f->path));
			trace_sb_lit(&d->ret, ">");
		}
	}
}

bool trace_dec_oom(const trace_dec *d)
{
	for (int i = 0; i < 6; i++)
		if (d->arg[i].oom || d->fdpath[i].oom)
			return true;
	return d->ret.oom;
}

void trace_dec_free(trace_dec *d)
{
	for (int i = 0; i < 6; i++) {
		trace_sb_free(&d->arg[i]);
		trace_sb_free(&d->fdpath[i]);
	}
	trace_sb_free(&d->ret);
}
