/* Virtual inode and device numbers (determ_inode.c): first-observation
 * order, hard links, getdents records, bad records. */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "trace/determ_inode.h"
#include "unit.h"

TEST(numbers_follow_first_observation_per_device)
{
	determ_inomap m = {0};
	uint64_t a = makedev(0, 47), b = makedev(8, 1);
	CHECK(determ_ino_map(&m, a, 123456) == DETERM_INO_FIRST);
	CHECK(determ_ino_map(&m, a, 99) == DETERM_INO_FIRST + 1);
	CHECK(determ_ino_map(&m, b, 123456) == DETERM_INO_FIRST); /* another device, its own numbers */
	CHECK(determ_ino_map(&m, a, 123456) == DETERM_INO_FIRST); /* a hard link: the same file */
	CHECK(determ_ino_map(&m, a, 0) == 0);
	CHECK(determ_dev_map(&m, a) == makedev(0, DETERM_DEV_FIRST));
	CHECK(determ_dev_map(&m, b) == makedev(0, DETERM_DEV_FIRST + 1));
	CHECK(determ_dev_map(&m, makedev(0, 3)) == makedev(0, DETERM_DEV_FIRST + 2));
	determ_inomap_free(&m);
	/* The same observations in another run with other real numbers: the same result. */
	determ_inomap r = {0};
	CHECK(determ_ino_map(&r, makedev(0, 52), 7) == DETERM_INO_FIRST);
	CHECK(determ_ino_map(&r, makedev(0, 52), 8) == DETERM_INO_FIRST + 1);
	CHECK(determ_dev_map(&r, makedev(0, 52)) == makedev(0, DETERM_DEV_FIRST));
	determ_inomap_free(&r);
}

TEST(a_removed_file_s_number_is_not_reused)
{
	determ_inomap m = {0};
	CHECK(determ_ino_map(&m, 9, 500) == DETERM_INO_FIRST);
	CHECK(determ_ino_map(&m, 9, 501) == DETERM_INO_FIRST + 1);
	determ_ino_forget(&m, 9, 500); /* unlinked; the file system hands 500 to a new file */
	CHECK(determ_ino_map(&m, 9, 500) == DETERM_INO_FIRST + 2);
	CHECK(determ_ino_map(&m, 9, 500) == DETERM_INO_FIRST + 2);
	determ_ino_forget(&m, 9, 777); /* never seen: nothing */
	CHECK(determ_ino_map(&m, 9, 777) == DETERM_INO_FIRST + 3);
	determ_inomap_free(&m);
	determ_ino_forget(&m, 1, 1); /* an empty map */
}

TEST(many_files_keep_their_numbers)
{
	determ_inomap m = {0};
	for (uint64_t i = 1; i <= 50000; i++)
		CHECK(determ_ino_map(&m, 5, i * 7919) == DETERM_INO_FIRST + i - 1);
	for (uint64_t i = 50000; i >= 1; i--)
		if (determ_ino_map(&m, 5, i * 7919) != DETERM_INO_FIRST + i - 1) {
			CHECK(!"a number changed");
			break;
		}
	determ_inomap_free(&m);
}

static size_t put_dirent(uint8_t *buf, size_t off, uint64_t ino, const char *name)
{
	size_t reclen = (offsetof(struct dirent64, d_name) + strlen(name) + 1 + 7) & ~(size_t)7;
	struct dirent64 d = {.d_ino = ino, .d_off = (int64_t)off + 1, .d_reclen = (unsigned short)reclen};
	memcpy(buf + off, &d, offsetof(struct dirent64, d_name));
	memcpy(buf + off + offsetof(struct dirent64, d_name), name, strlen(name) + 1);
	return off + reclen;
}

TEST(getdents_records_agree_with_stat)
{
	uint8_t buf[256] = {0};
	size_t len = put_dirent(buf, 0, 500, ".");
	len = put_dirent(buf, len, 400, "..");
	len = put_dirent(buf, len, 9001, "file");
	determ_inomap m = {0};
	uint64_t st_ino = determ_ino_map(&m, 3, 9001); /* stat first, then list */
	uint64_t out[2];
	CHECK(determ_dirents_map(&m, 3, buf, len, out, 2) == 3);
	CHECK(out[0] == DETERM_INO_FIRST + 1 && out[1] == DETERM_INO_FIRST + 2);
	struct dirent64 d;
	memcpy(&d, buf + 2 * 24 /* "." and ".." take 24 bytes each */, sizeof(d.d_ino));
	CHECK(d.d_ino == st_ino);
	memcpy(&d, buf, sizeof(d.d_ino));
	CHECK(d.d_ino == DETERM_INO_FIRST + 1);
	/* Listed again: the same numbers, nothing new. */
	uint8_t again[256];
	len = put_dirent(again, 0, 500, ".");
	CHECK(determ_dirents_map(&m, 3, again, len, NULL, 0) == 1);
	memcpy(&d, again, sizeof(d.d_ino));
	CHECK(d.d_ino == DETERM_INO_FIRST + 1);
	determ_inomap_free(&m);
}

TEST(getdents_bad_records_stop_the_walk)
{
	uint8_t buf[128] = {0};
	size_t len = put_dirent(buf, 0, 77, "a");
	determ_inomap m = {0};
	CHECK(determ_dirents_map(&m, 1, buf, len - 1, NULL, 0) == 0); /* the record does not fit */
	uint8_t zero[64] = {0};
	CHECK(determ_dirents_map(&m, 1, zero, sizeof(zero), NULL, 0) == 0); /* reclen 0 */
	CHECK(determ_dirents_map(&m, 1, buf, 10, NULL, 0) == 0);
	CHECK(determ_dirents_map(&m, 1, buf, 0, NULL, 0) == 0);
	CHECK(determ_dirents_map(&m, 1, buf, len, NULL, 0) == 1);
	determ_inomap_free(&m);
}

/* The order a file system lists a directory in is its own (an overlay's
 * upper layer first, ext4 by hash): numbering the new entries by name first
 * gives the same numbers whatever the order. */
TEST(listing_order_does_not_change_the_numbers)
{
	const char *names[] = {".", "..", "zeta", "alpha", "mid"};
	uint64_t got[2][5];
	for (int run = 0; run < 2; run++) {
		uint8_t buf[512] = {0};
		size_t len = 0;
		for (int i = 0; i < 5; i++) {
			int k = run ? 4 - i : i; /* the second run lists in reverse, other real numbers */
			len = put_dirent(buf, len, (uint64_t)(run ? 900 : 100) + (uint64_t)k, names[k]);
		}
		determ_inomap m = {0};
		CHECK(determ_dirents_have_new(&m, 3, buf, len));
		CHECK(determ_dirents_number(&m, 3, buf, len) == 5);
		CHECK(!determ_dirents_have_new(&m, 3, buf, len));
		CHECK(determ_dirents_number(&m, 3, buf, len) == 0);
		uint64_t out[5];
		CHECK(determ_dirents_map(&m, 3, buf, len, out, 5) == 5);
		for (int i = 0; i < 5; i++)
			got[run][run ? 4 - i : i] = out[i];
		determ_inomap_free(&m);
	}
	for (int k = 0; k < 5; k++)
		CHECK(got[0][k] == got[1][k]);
	/* by name: "." < ".." < "alpha" < "mid" < "zeta" */
	CHECK(got[0][0] == DETERM_INO_FIRST && got[0][1] == DETERM_INO_FIRST + 1 &&
	      got[0][3] == DETERM_INO_FIRST + 2 && got[0][4] == DETERM_INO_FIRST + 3 &&
	      got[0][2] == DETERM_INO_FIRST + 4);
}
