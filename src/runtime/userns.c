/* User namespaces: uid/gid maps, the per-environment host uid range, and
 * helper namespaces used only to describe idmappings for volumes. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "util/fd.h"
#include "util/fs.h"

/* Host uids 0x70000000.. are far from Debian's subuid ranges (100000+) and
 * systemd's container range (524288..0x6FFFFFFF); 16384 slots of 65536. */
#define SLOT_BASE 0x70000000u
#define SLOT_COUNT 16384u

uid_t userns_slot_base(unsigned slot)
{
	return SLOT_BASE + slot * ENV_UID_COUNT;
}

/* The claim appears with its owner in it: an unnamed file that holds it,
 * linked under the slot's name (link fails if the name exists). Created
 * and then written, a claim whose creator died in between stayed empty,
 * naming no owner that gc could find gone. Without O_TMPFILE, O_EXCL
 * creation is the lock (gc frees such a claim left empty once it is
 * SLOT_EMPTY_STALE_S old). */
static int slot_take(int dfd, unsigned slot, const char *owner)
{
	char name[16];
	snprintf(name, sizeof(name), "%u", slot);
	_cleanup_close_ int fd = openat(dfd, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, 0600);
	if (fd >= 0) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (fd_write_all(fd, owner, strlen(owner)) < 0)
			return -errno;
		return linkat(AT_FDCWD, path, dfd, name, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
	}
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (fd_write_all(fd, owner, strlen(owner)) < 0) {
		int r = -errno;
		(void)unlinkat(dfd, name, 0);
		return r;
	}
	return 0;
}

static int slot_dir_open(sbx_err **err)
{
	const char *dir = USERNS_SLOT_DIR;
	int r = fs_mkdir_p(dir, 0700);
	if (r < 0)
		return err_errnum(err, r, "create '%s'", dir);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return dfd < 0 ? err_errno(err, "open '%s'", dir) : dfd;
}

int userns_slot_alloc(const char *owner, unsigned *ret_slot, sbx_err **err)
{
	_cleanup_close_ int dfd = slot_dir_open(err);
	if (dfd < 0)
		return -1;
	unsigned start;
	if (getrandom(&start, sizeof(start), 0) != sizeof(start))
		start = (unsigned)getpid();
	for (unsigned i = 0; i < SLOT_COUNT; i++) {
		unsigned slot = (start + i) % SLOT_COUNT;
		int r = slot_take(dfd, slot, owner);
		if (r == -EEXIST)
			continue;
		if (r < 0)
			return err_errnum(err, -r, "reserve uid slot in '%s'", USERNS_SLOT_DIR);
		*ret_slot = slot;
		return 0;
	}
	return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOSPC, "no free uid range: %u environments exist",
		       SLOT_COUNT);
}

int userns_slot_take(unsigned slot, const char *owner, sbx_err **err)
{
	_cleanup_close_ int dfd = slot_dir_open(err);
	if (dfd < 0)
		return -1;
	int r = slot_take(dfd, slot, owner);
	return r < 0 ? err_errnum(err, -r, "reclaim uid slot '%s/%u'", USERNS_SLOT_DIR, slot) : 0;
}

int userns_slot_free(unsigned slot)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%u", USERNS_SLOT_DIR, slot);
	return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

int userns_slot_free_owned(unsigned slot, const char *owner)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%u", USERNS_SLOT_DIR, slot);
	_cleanup_free_ char *held = NULL;
	if (fs_read_file(path, 8192, &held, NULL) < 0 || !streq(held, owner))
		return 0; /* freed already (and perhaps another environment's now) */
	return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

static int write_proc(pid_t pid, const char *file, const char *content, sbx_err **err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	int r = fs_write_string(path, content);
	if (r < 0)
		return err_errnum(err, r, "write %s '%s'", file, content);
	return 0;
}

int userns_write_maps(pid_t pid, const env_config *c, sbx_err **err)
{
	char buf[128];
	if (c->rootless && write_proc(pid, "setgroups", "deny", err) < 0)
		return -1;
	snprintf(buf, sizeof(buf), "0 %u %u\n", (unsigned)c->host_uid, c->id_count);
	if (write_proc(pid, "uid_map", buf, err) < 0)
		return -1;
	snprintf(buf, sizeof(buf), "0 %u %u\n", (unsigned)c->host_gid, c->id_count);
	if (write_proc(pid, "gid_map", buf, err) < 0)
		return -1;
	return 0;
}

int userns_make_idmap_ns(uid_t inner_uid, gid_t inner_gid, uid_t outer_uid, gid_t outer_gid, sbx_err **err)
{
	int sync[2];
	if (pipe2(sync, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	pid_t pid = fork();
	if (pid < 0) {
		safe_close(sync[0]);
		safe_close(sync[1]);
		return err_errno(err, "fork");
	}
	if (pid == 0) {
		/* Child: enter a new user namespace and wait to be killed. */
		safe_close(sync[1]);
		if (unshare(CLONE_NEWUSER) < 0)
			_exit(1);
		char c;
		(void)!read(sync[0], &c, 1);
		_exit(0);
	}
	safe_close(sync[0]);
	int ret = -1;
	char buf[96], path[64];
	/* Wait until the child has unshared: its ns link differs from ours. */
	for (int i = 0; i < 2000; i++) {
		struct stat a, b;
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		if (stat(path, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 && a.st_ino != b.st_ino)
			break;
		usleep(50);
	}
	snprintf(buf, sizeof(buf), "%u %u 1\n", (unsigned)inner_uid, (unsigned)outer_uid);
	if (write_proc(pid, "uid_map", buf, err) < 0)
		goto out;
	snprintf(buf, sizeof(buf), "%u %u 1\n", (unsigned)inner_gid, (unsigned)outer_gid);
	if (write_proc(pid, "gid_map", buf, err) < 0)
		goto out;
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	ret = open(path, O_RDONLY | O_CLOEXEC);
	if (ret < 0)
		ret = err_errno(err, "open '%s'", path);
out:
	safe_close(sync[1]);
	(void)RETRY_EINTR(waitpid(pid, NULL, 0));
	return ret;
}

bool userns_available(void)
{
	static int cached = -1;
	if (cached >= 0)
		return cached;
	pid_t pid = fork();
	if (pid == 0)
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
	int status = 0;
	if (pid < 0 || RETRY_EINTR(waitpid(pid, &status, 0)) < 0)
		return false;
	cached = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	return cached;
}
