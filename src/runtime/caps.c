/* Capabilities, with prctl and the raw capset syscall (no libcap).
 *
 * Order inside caps_drop: the bounding set first (PR_CAPBSET_DROP needs
 * CAP_SETPCAP, which is in the safe set and so survives), then ambient, then
 * capset for permitted/effective/inheritable. After exec the process keeps
 * exactly the safe set: bounding limits what file capabilities could add,
 * and with no ambient caps an exec as non-root ends with none at all. */
#include "runtime/caps.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CAP_BIT(c) (UINT64_C(1) << (c))

const uint64_t caps_safe_set = CAP_BIT(CAP_CHOWN) | CAP_BIT(CAP_DAC_OVERRIDE) | CAP_BIT(CAP_FOWNER) |
			       CAP_BIT(CAP_FSETID) | CAP_BIT(CAP_KILL) | CAP_BIT(CAP_SETGID) |
			       CAP_BIT(CAP_SETUID) | CAP_BIT(CAP_SETPCAP) | CAP_BIT(CAP_NET_BIND_SERVICE) |
			       CAP_BIT(CAP_SYS_CHROOT) | CAP_BIT(CAP_SETFCAP);

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

int caps_drop(sbx_err **err)
{
	int last = caps_last_cap();

	for (int cap = 0; cap <= last; cap++) {
		if (caps_safe_set & CAP_BIT(cap))
			continue;
		/* EINVAL: the kernel does not know this cap; nothing to drop. */
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return err_errno(err, "caps: drop capability %d from the bounding set", cap);
	}

	/* EINVAL: kernel older than 4.3 has no ambient set. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return err_errno(err, "caps: clear ambient capabilities");

	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {0};
	if (syscall(SYS_capget, &hdr, data) < 0)
		return err_errno(err, "caps: capget");

	/* permitted = effective = safe set (intersected with what we hold, since
	 * capset cannot raise permitted); inheritable empty. */
	uint64_t permitted = ((uint64_t)data[1].permitted << 32 | data[0].permitted) & caps_safe_set;
	for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++) {
		data[i].permitted = data[i].effective = (uint32_t)(permitted >> (32 * i));
		data[i].inheritable = 0;
	}
	hdr.version = _LINUX_CAPABILITY_VERSION_3;
	hdr.pid = 0;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return err_errno(err, "caps: capset");
	return 0;
}
