/* The device cgroup of an environment with CDI devices (runtime/devices.h):
 * every device is denied but the nodes of sbx's minimal /dev and the CDI
 * nodes, with the access their spec gives (cgroup "rwm").
 *
 * Two backends, both used where the host has both (a hybrid host: the
 * kernel asks the BPF program first, then the v1 list; either can deny):
 *  - cgroup v1: devices/sbx/<id> with "a" denied, then one allow per rule;
 *  - cgroup v2: a BPF_CGROUP_DEVICE program, assembled here from the same
 *    rules, attached to the environment's v2 group (BPF_F_ALLOW_MULTI, so
 *    that the ancestors' programs still run).
 * Environments without devices keep what they had: no mknod in the user
 * namespace and nodev everywhere but /dev is their wall.
 * SBX_TEST_DEVCG=v1|v2 uses one backend only (tests of each). */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/cdi.h"
#include "runtime/devices.h"
#include "util/fs.h"
#include "util/log.h"

#define DEVCG_V1 "/sys/fs/cgroup/devices"

typedef struct devrule {
	char type;	      /* 'c', 'b', 'a' (any) */
	int64_t major, minor; /* -1: any */
	char perms[4];
} devrule;

/* sbx's /dev (mount.c): null zero full random urandom tty ptmx and the
 * ptys; mknod of nothing. */
static const devrule defaults[] = {
    {'c', 1, 3, "rw"}, {'c', 1, 5, "rw"}, {'c', 1, 7, "rw"}, {'c', 1, 8, "rw"},
    {'c', 1, 9, "rw"}, {'c', 5, 0, "rw"}, {'c', 5, 2, "rw"}, {'c', 136, -1, "rw"},
};

static size_t build_rules(const env_config *c, devrule *out, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(defaults) && n < cap; i++)
		out[n++] = defaults[i];
	for (size_t i = 0; c->cdi && i < c->cdi->n_nodes && n < cap; i++) {
		const cdi_node *d = &c->cdi->nodes[i];
		if ((d->type != 'c' && d->type != 'b') || !d->perms[0])
			continue; /* fifos are not devices; "none" allows nothing */
		out[n] = (devrule){d->type, d->major, d->minor, ""};
		memcpy(out[n].perms, d->perms, sizeof(out[n].perms));
		n++;
	}
	return n;
}

/* ---- v1 ---- */

static int v1_apply(const env_config *c, pid_t pid, const devrule *r, size_t n, sbx_err **err)
{
	char dir[512], p[600], line[64];
	snprintf(dir, sizeof(dir), DEVCG_V1 "/sbx");
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return err_errno(err, "device cgroup: mkdir '%s'", dir);
	snprintf(dir, sizeof(dir), DEVCG_V1 "/sbx/%s", c->id);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return err_errno(err, "device cgroup: mkdir '%s'", dir);
	snprintf(p, sizeof(p), "%s/devices.deny", dir);
	int q = fs_write_string(p, "a");
	for (size_t i = 0; q >= 0 && i < n; i++) {
		char maj[24] = "*", min[24] = "*";
		if (r[i].major >= 0)
			snprintf(maj, sizeof(maj), "%lld", (long long)r[i].major);
		if (r[i].minor >= 0)
			snprintf(min, sizeof(min), "%lld", (long long)r[i].minor);
		snprintf(line, sizeof(line), "%c %s:%s %s", r[i].type, maj, min, r[i].perms);
		snprintf(p, sizeof(p), "%s/devices.allow", dir);
		q = fs_write_string(p, line);
	}
	if (q >= 0) {
		snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
		snprintf(line, sizeof(line), "%d", (int)pid);
		q = fs_write_string(p, line);
	}
	if (q < 0) {
		(void)rmdir(dir);
		return err_errnum(err, -q, "device cgroup: write '%s'", p);
	}
	return 0;
}

/* ---- v2: BPF_CGROUP_DEVICE ---- */

static struct bpf_insn ins(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	return (struct bpf_insn){.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
}

/* r2 = access, r3 = type, r4 = major, r5 = minor; each rule is a run of
 * compares that jump to the next rule on a mismatch, else return 1. */
static size_t bpf_assemble(const devrule *r, size_t n, struct bpf_insn *p, size_t cap)
{
	size_t k = 0;
#define EMIT(x)                                                                                              \
	do {                                                                                                 \
		if (k < cap)                                                                                 \
			p[k] = (x);                                                                          \
		k++;                                                                                         \
	} while (0)
	EMIT(ins(BPF_LDX | BPF_W | BPF_MEM, 2, 1, 0, 0)); /* access_type */
	EMIT(ins(BPF_ALU64 | BPF_MOV | BPF_X, 3, 2, 0, 0));
	EMIT(ins(BPF_ALU64 | BPF_AND | BPF_K, 3, 0, 0, 0xffff));
	EMIT(ins(BPF_ALU64 | BPF_RSH | BPF_K, 2, 0, 0, 16));
	EMIT(ins(BPF_LDX | BPF_W | BPF_MEM, 4, 1, 4, 0)); /* major */
	EMIT(ins(BPF_LDX | BPF_W | BPF_MEM, 5, 1, 8, 0)); /* minor */
	for (size_t i = 0; i < n; i++) {
		int acc = 0;
		acc |= strchr(r[i].perms, 'r') ? BPF_DEVCG_ACC_READ : 0;
		acc |= strchr(r[i].perms, 'w') ? BPF_DEVCG_ACC_WRITE : 0;
		acc |= strchr(r[i].perms, 'm') ? BPF_DEVCG_ACC_MKNOD : 0;
		/* a jump at index j of a rule of len instructions to the next rule: len - j - 1 */
		int len = 5 + (r[i].type != 'a') + (r[i].major >= 0) + (r[i].minor >= 0), j = 0;
		if (r[i].type != 'a') {
			EMIT(ins(BPF_JMP | BPF_JNE | BPF_K, 3, 0, (int16_t)(len - j - 1),
				 r[i].type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK));
			j++;
		}
		if (r[i].major >= 0) {
			EMIT(ins(BPF_JMP | BPF_JNE | BPF_K, 4, 0, (int16_t)(len - j - 1),
				 (int32_t)r[i].major));
			j++;
		}
		if (r[i].minor >= 0)
			EMIT(ins(BPF_JMP | BPF_JNE | BPF_K, 5, 0, (int16_t)(len - j - 1),
				 (int32_t)r[i].minor));
		EMIT(ins(BPF_ALU64 | BPF_MOV | BPF_X, 6, 2, 0, 0));
		EMIT(ins(BPF_ALU64 | BPF_AND | BPF_K, 6, 0, 0, ~acc));
		EMIT(ins(BPF_JMP | BPF_JNE | BPF_K, 6, 0, 2, 0));
		EMIT(ins(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1));
		EMIT(ins(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
	}
	EMIT(ins(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0));
	EMIT(ins(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
#undef EMIT
	return k;
}

static int v2_apply(int cg2_fd, const devrule *r, size_t n, sbx_err **err)
{
	struct bpf_insn prog[512];
	size_t len = bpf_assemble(r, n, prog, ARRAY_SIZE(prog));
	if (len > ARRAY_SIZE(prog))
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "device cgroup: too many device rules");
	static char log[4096];
	union bpf_attr a = {0};
	a.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	a.insns = (uint64_t)(uintptr_t)prog;
	a.insn_cnt = (uint32_t)len;
	a.license = (uint64_t)(uintptr_t) "GPL";
	_cleanup_close_ int pfd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a));
	if (pfd < 0) {
		/* Again with the verifier's log, for the message only (a log that
		 * overflows its buffer fails a load by itself: not the first try). */
		int e = errno;
		a.log_buf = (uint64_t)(uintptr_t)log;
		a.log_size = sizeof(log);
		a.log_level = 1;
		int again = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a));
		if (again >= 0)
			close(again);
		return err_errnum(err, e, "device cgroup: load the BPF device program (%.200s)", log);
	}
	union bpf_attr at = {0};
	at.target_fd = (uint32_t)cg2_fd;
	at.attach_bpf_fd = (uint32_t)pfd;
	at.attach_type = BPF_CGROUP_DEVICE;
	at.attach_flags = BPF_F_ALLOW_MULTI;
	if (syscall(SYS_bpf, BPF_PROG_ATTACH, &at, sizeof(at)) < 0)
		return err_errno(err, "device cgroup: attach the BPF device program");
	/* The program lives as long as the cgroup it is attached to. */
	return 0;
}

int devcg_attach(const env_config *c, pid_t pid, int cg2_fd, json_t *warnings, sbx_err **err)
{
	if (!c->cdi)
		return 0;
	devrule r[256];
	size_t n = build_rules(c, r, ARRAY_SIZE(r));
	const char *only = getenv("SBX_TEST_DEVCG");
	only = only && *only ? only : NULL;
	bool want_v1 = !only || streq(only, "v1"), want_v2 = !only || streq(only, "v2");
	bool have_v1 = access(DEVCG_V1 "/devices.allow", F_OK) == 0;
	int done = 0;
	if (want_v1 && have_v1 && !c->rootless) {
		if (v1_apply(c, pid, r, n, err) < 0)
			return -1;
		done++;
	}
	if (want_v2 && cg2_fd >= 0 && !c->rootless) {
		_cleanup_err_ sbx_err *e = NULL;
		if (!done && v2_apply(cg2_fd, r, n, err) < 0)
			return -1; /* the only wall there would be */
		if (done && v2_apply(cg2_fd, r, n, &e) < 0)
			json_array_append_new(warnings, json_string(sbx_err_message(e)));
		else
			done++;
	}
	if (!done)
		json_array_append_new(
		    warnings,
		    json_string(
			c->rootless
			    ? "devices: rootless, the device cgroup cannot be set: the "
			      "environment reaches only the nodes bound into its /dev"
			    : "devices: no device cgroup on this host (neither v1 devices nor a "
			      "v2 group): the environment reaches only the nodes bound into its /dev"));
	return 0;
}

void devcg_remove(const char *id)
{
	char dir[512];
	snprintf(dir, sizeof(dir), DEVCG_V1 "/sbx/%s", id);
	if (access(dir, F_OK) < 0)
		return;
	for (int i = 0; i < 50 && rmdir(dir) < 0 && errno == EBUSY; i++)
		usleep(20000);
}
