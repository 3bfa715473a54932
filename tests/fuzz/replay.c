/* Standalone driver: replays fuzz corpora through a target without
 * libFuzzer, so ordinary CI (gcc, no clang) exercises every seed and every
 * crash reproducer ever committed. Usage: replay DIR|FILE... */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	size_t cap = 1 << 16, len = 0;
	uint8_t *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap) {
			uint8_t *nb = realloc(buf, cap *= 2);
			if (!nb)
				break;
			buf = nb;
		}
	}
	fclose(f);
	if (buf)
		LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 1;
}

int main(int argc, char **argv)
{
	int count = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			count += run_file(argv[i]);
			continue;
		}
		DIR *d = opendir(argv[i]);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			char p[4096];
			snprintf(p, sizeof(p), "%s/%s", argv[i], de->d_name);
			count += run_file(p);
		}
		if (d)
			closedir(d);
	}
	printf("replayed %d inputs\n", count);
	return 0;
}
