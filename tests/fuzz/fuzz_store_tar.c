/* libFuzzer target: the tar extractor (src/store/tarr.c) on arbitrary input.
 * Each input is extracted into a fresh directory <tmp>/target next to a
 * sentinel file; the first byte picks the options (whiteout conversion,
 * device policy, setid, sbx's literal `.wh.` names, ACLs). Checked: no crash, no leak (ASan), and nothing is
 * ever created, changed or linked outside the target: the parent holds
 * exactly "sentinel" and "target" afterwards, and the sentinel keeps its
 * content and link count. Built and run by tests/fuzz/run. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/tarr.h"
#include "util/fs.h"

static char parent[64];

static void check_outside(void)
{
	DIR *d = opendir(parent);
	if (!d)
		abort();
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, "sentinel") &&
		    strcmp(de->d_name, "target"))
			abort(); /* something was written beside the target */
	closedir(d);
	char p[128], buf[16] = {0};
	snprintf(p, sizeof(p), "%s/sentinel", parent);
	int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || read(fd, buf, sizeof(buf)) != 4 || memcmp(buf, "keep", 4) || fstat(fd, &st) < 0 ||
	    st.st_nlink != 1)
		abort(); /* the sentinel was changed or hard-linked */
	close(fd);
}

static void remove_parent(void)
{
	fs_rm_rf(parent);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!parent[0]) {
		snprintf(parent, sizeof(parent), "/tmp/sbx-fuzz-tar-%d", (int)getpid());
		(void)atexit(remove_parent);
		fs_rm_rf(parent);
		if (mkdir(parent, 0700) < 0)
			abort();
		char p[128];
		snprintf(p, sizeof(p), "%s/sentinel", parent);
		if (fs_write_atomic(p, "keep", 4, 0644) < 0)
			abort();
	}
	char target[128];
	snprintf(target, sizeof(target), "%s/target", parent);
	fs_rm_rf(target);
	if (mkdir(target, 0700) < 0)
		abort();
	int fd = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		abort();
	uint8_t flags = size ? data[0] : 0;
	store_tar_extract_opts o = STORE_TAR_EXTRACT_OPTS_INIT;
	o.max_bytes = 4 << 20;
	o.max_entries = 2000;
	o.whiteouts = flags & 1;
	o.keep_setid = flags & 2;
	o.devices = (flags & 4) ? STORE_TAR_DEV_SKIP : STORE_TAR_DEV_REFUSE;
	o.literal_names = flags & 8;
	o.acls = flags & 16; /* POSIX ACLs validated and restored, the extractor's own id only */
	o.ids = (store_idmap){(uint32_t)geteuid(), (uint32_t)getegid(), 1};
	store_tar_mem m = {data + (size ? 1 : 0), size ? size - 1 : 0, 0};
	sbx_err *err = NULL;
	int r = store_tar_extract(fd, store_tar_mem_read, &m, &o, NULL, &err);
	if (r < 0 && (!err || !sbx_err_message(err)[0]))
		abort(); /* every failure says why */
	sbx_err_free(err);
	close(fd);
	check_outside();
	fs_rm_rf(target);
	return 0;
}
