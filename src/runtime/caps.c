/* Capabilities, with prctl and the raw capset syscall (no libcap).
 *
 * Order inside caps_drop: the bounding set first (PR_CAPBSET_DROP needs
 * CAP_SETPCAP, which is in the safe set and so survives), then ambient, then
 * capset for permitted/effective/inheritable. After exec the process keeps
 * exactly the safe set: bounding limits what file capabilities could add,
 * and with no ambient caps an exec as non-root ends with none at all. */
#include "runtime/caps.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CAP_BIT(c) (UINT64_C(1) << (c))

const uint64_t caps_safe_set = CAP_BIT(CAP_CHOWN) | CAP_BIT(CAP_DAC_OVERRIDE) | CAP_BIT(CAP_FOWNER) |
			       CAP_BIT(CAP_FSETID) | CAP_BIT(CAP_KILL) | CAP_BIT(CAP_SETGID) |
			       CAP_BIT(CAP_SETUID) | CAP_BIT(CAP_SETPCAP) | CAP_BIT(CAP_NET_BIND_SERVICE) |
			       CAP_BIT(CAP_SYS_CHROOT) | CAP_BIT(CAP_SETFCAP);

/* capability(7), by number; names outside the safe set are known so that
 * refusing one can say why ("not in the safe set") instead of "unknown". */
static const char *const cap_names[] = {
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
};

int caps_number(const char *name)
{
	if (!name)
		return -1;
	if (strncasecmp(name, "CAP_", 4) == 0)
		name += 4;
	for (size_t i = 0; i < ARRAY_SIZE(cap_names); i++)
		if (strcasecmp(name, cap_names[i]) == 0)
			return (int)i;
	return -1;
}

const char *caps_name(int cap)
{
	return cap >= 0 && (size_t)cap < ARRAY_SIZE(cap_names) ? cap_names[cap] : NULL;
}

int caps_parse_list(const char *const *names, bool allow_all, const char *field, uint64_t *ret, sbx_err **err)
{
	uint64_t set = 0;
	for (const char *const *n = names; n && *n; n++) {
		if (allow_all && strcasecmp(*n, "ALL") == 0) {
			set |= caps_safe_set;
			continue;
		}
		int c = caps_number(*n);
		if (c < 0)
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EINVAL,
			    "%s '%.64s': unknown capability (names as in capabilities(7), e.g. CHOWN or "
			    "CAP_CHOWN%s)",
			    field, *n, allow_all ? ", or ALL" : "");
		if (!(caps_safe_set & CAP_BIT(c)))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
				       "%s %s: not in the safe set (" CAPS_SAFE_NAMES
				       "); an environment never holds "
				       "other capabilities, even inside its user namespace",
				       field, cap_names[c]);
		set |= CAP_BIT(c);
	}
	*ret = set;
	return 0;
}

int caps_compute(uint64_t ceiling, bool ceiling_from_policy, const char *const *drop, const char *const *add,
		 uint64_t *ret, sbx_err **err)
{
	uint64_t d = 0, a = 0;
	if (caps_parse_list(drop, true, "--cap-drop", &d, err) < 0 ||
	    caps_parse_list(add, false, "--cap-add", &a, err) < 0)
		return -1;
	uint64_t wider = a & ~ceiling & caps_safe_set;
	if (wider) {
		int c = __builtin_ctzll(wider);
		return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
			       "--cap-add %s: %s; an explicit option may only narrow it", cap_names[c],
			       ceiling_from_policy ? "the policy does not keep it (its \"capabilities\")"
						   : "not in the environment's capabilities");
	}
	*ret = ((ceiling & caps_safe_set) & ~d) | a;
	return 0;
}

json_t *caps_to_json(uint64_t set)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < ARRAY_SIZE(cap_names); i++)
		if (set & CAP_BIT(i))
			json_array_append_new(a, json_string(cap_names[i]));
	return a;
}

int caps_from_json(const json_t *a, uint64_t *ret)
{
	if (!json_is_array(a))
		return -1;
	uint64_t set = 0;
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v)
	{
		int c = caps_number(json_string_value(v));
		if (c < 0 || !(caps_safe_set & CAP_BIT(c)))
			return -1;
		set |= CAP_BIT(c);
	}
	*ret = set;
	return 0;
}

/* The highest capability this kernel knows; 40 (CAP_CHECKPOINT_RESTORE) if
 * /proc is not there to say. */
static int caps_last_cap(void)
{
	_cleanup_close_ int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	char buf[16];
	int last = -1;

	if (fd >= 0) {
		ssize_t n = RETRY_EINTR(read(fd, buf, sizeof(buf) - 1));
		if (n > 0) {
			buf[n] = '\0';
			if (sscanf(buf, "%d", &last) != 1)
				last = -1;
		}
	}
	return last >= 0 && last < 64 ? last : 40;
}

/* Drops from the bounding set every capability outside `keep`, among those
 * in `held` (a superset of what the set holds). -errno. */
static int bounding_narrow(uint64_t keep, uint64_t held, int last)
{
	for (int cap = 0; cap <= last; cap++) {
		if ((keep & CAP_BIT(cap)) || !(held & CAP_BIT(cap)))
			continue;
		/* EINVAL: the kernel does not know this cap; nothing to drop. */
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	}
	return 0;
}

/* The bounding set as caps_drop left it, and the kernel's last capability
 * (bset_recorded: caps_drop ran in this process or an ancestor). A bounding
 * set only ever shrinks, and fork/clone copy both it and this record, so
 * the record stays a superset of the set: caps_enter_identity drops from it
 * alone, a few prctls per command instead of one per capability the kernel
 * knows (each a new set of credentials) and a read of cap_last_cap. */
static bool bset_recorded;
static uint64_t bset_held;
static int bset_last;

/* permitted = effective = `set` & what we hold (capset cannot raise
 * permitted); inheritable empty. -errno. */
static int set_caps(uint64_t set, bool exact)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {0};
	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	uint64_t permitted = ((uint64_t)data[1].permitted << 32 | data[0].permitted) & set;
	if (exact && permitted != set)
		return -EPERM;
	for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++) {
		data[i].permitted = data[i].effective = (uint32_t)(permitted >> (32 * i));
		data[i].inheritable = 0;
	}
	hdr.version = _LINUX_CAPABILITY_VERSION_3;
	hdr.pid = 0;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	return 0;
}

int caps_drop(sbx_err **err)
{
	int last = caps_last_cap();
	int r = bounding_narrow(caps_safe_set, ~UINT64_C(0), last);
	if (r < 0)
		return err_errnum(err, -r, "caps: drop capabilities from the bounding set");
	uint64_t held = 0;
	for (int cap = 0; cap <= last; cap++)
		if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1)
			held |= CAP_BIT(cap);
	bset_held = held;
	bset_last = last;
	bset_recorded = true;

	/* EINVAL: kernel older than 4.3 has no ambient set. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return err_errno(err, "caps: clear ambient capabilities");

	if ((r = set_caps(caps_safe_set, false)) < 0)
		return err_errnum(err, -r, "caps: capset");
	return 0;
}

int caps_enter_identity(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups, bool no_setgroups,
			uint64_t keep, const char **ret_step)
{
	keep = uid == 0 ? keep & caps_safe_set : 0;
	/* 1. Bounding set first: dropping needs CAP_SETPCAP, which the uid
	 *    change below takes away from a non-root user. */
	*ret_step = "narrow the capability bounding set";
	int r = bset_recorded ? bounding_narrow(keep, bset_held, bset_last)
			      : bounding_narrow(keep, ~UINT64_C(0), caps_last_cap());
	if (r < 0)
		return r;
	/* 2. Groups, then gid, then uid (each needs the capability the next
	 *    step gives up). Without PR_SET_KEEPCAPS (init never sets it), the
	 *    uid change from 0 clears permitted, effective and ambient.
	 *    Raw syscalls, for the calling thread alone, as posix_spawn's child
	 *    makes them: glibc's wrappers would walk its list of threads to
	 *    change them all, which a CLONE_VM child shares with init. */
	*ret_step = "setgroups";
	if (!no_setgroups && syscall(SYS_setgroups, n_groups, groups) < 0)
		return -errno;
	*ret_step = "setgid";
	if (syscall(SYS_setresgid, gid, gid, gid) < 0)
		return -errno;
	*ret_step = "setuid";
	if (syscall(SYS_setresuid, uid, uid, uid) < 0)
		return -errno;
	/* 3. What is left, exactly: the kept set for root, nothing otherwise. */
	*ret_step = "clear ambient capabilities";
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	*ret_step = "capset";
	if ((r = set_caps(keep, true)) < 0)
		return r;
	*ret_step = NULL;
	return 0;
}
