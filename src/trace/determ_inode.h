/* Inode and device numbers under determinism (docs/trace.md, "Identity").
 * The numbers a file system hands out are the host's: a replay's fresh
 * environment holds the same files under other inode numbers, and its overlay
 * and tmpfs mounts get other anonymous device numbers. The engine shows the
 * command virtual ones instead: each real device gets, the first time a result
 * shows it, the next virtual device (major 0, minor DETERM_DEV_FIRST + i), and
 * each real (device, inode) the next virtual inode number of its device
 * (DETERM_INO_FIRST + i), for the rest of the run. Keyed by the real pair,
 * hard links stay one file and `stat` agrees with the `d_ino` of a listing
 * (which the engine rewrites too, keyed by the directory's device). The
 * numbers are a function of the order in which the run observes files and
 * removes them (determ_ino_forget): a
 * pure function of the program's events for a sequential program; which of
 * two processes running at once observes a file first is timing.
 * Pure: no I/O; the engine calls it at stat and getdents exit stops. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DETERM_INO_FIRST 1000u
#define DETERM_DEV_FIRST 32u
#define DETERM_DEV_MAX 4096u /* distinct devices mapped; later ones read as the last */

typedef struct determ_inomap {
	struct determ_ino_ent *ents; /* open addressing on (dev, ino) */
	size_t n, cap;
	struct determ_dev_ent *devs; /* in first-observation order */
	size_t n_devs, cap_devs;
} determ_inomap;

/* The virtual device for a real one (a dev_t as the kernel encodes it:
 * makedev). Out of memory: the real one. */
uint64_t determ_dev_map(determ_inomap *m, uint64_t dev);
/* The virtual inode number of (real dev, real ino); 0 stays 0 (an entry the
 * kernel reports without one). Out of memory: the real one. */
uint64_t determ_ino_map(determ_inomap *m, uint64_t dev, uint64_t ino);
/* A name of the file (real dev, ino) was removed (unlinked or renamed over,
 * a directory removed): the file system may hand the number to a new file,
 * which gets a new virtual number at its first observation, as it would
 * where the number is not reused (a replay's fresh environment). The file
 * itself, if it keeps another name, is then new too. */
void determ_ino_forget(determ_inomap *m, uint64_t dev, uint64_t ino);
/* Numbers the entries of a whole directory listing (every getdents64 record
 * of the directory, back to back in buf) that have none yet, in the order of
 * their names: the order the file system lists them in is its own (an
 * overlay lists its upper layer first, ext4 by a hash of the name), and
 * differs between a recording and its replay, whose files sit in other
 * layers. The engine calls it before a listing that shows an entry without
 * a number. Returns how many were numbered. */
size_t determ_dirents_number(determ_inomap *m, uint64_t dev, const uint8_t *buf, size_t len);
/* Whether a listing (getdents64 records) shows an entry without a number. */
bool determ_dirents_have_new(const determ_inomap *m, uint64_t dev, const uint8_t *buf, size_t len);
/* Whether (real dev, ino) has a number (0: always). */
bool determ_ino_known(const determ_inomap *m, uint64_t dev, uint64_t ino);
/* Rewrites the d_ino of every record of a getdents64 (or x86_64 getdents:
 * the same first 18 bytes) result of `len` bytes from a directory on real
 * device `dev`, in place. Writes the virtual numbers of the first `max` records
 * to out (may be NULL). Stops at a record that does not fit. Returns the
 * number of records rewritten. */
size_t determ_dirents_map(determ_inomap *m, uint64_t dev, uint8_t *buf, size_t len, uint64_t *out,
			  size_t max);
void determ_inomap_free(determ_inomap *m);
