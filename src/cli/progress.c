/* Progress of long operations on a terminal (stderr): bytes and files done,
 * rate, and an estimate when the total is known. Nothing when stderr is not
 * a terminal or with --json; the line is erased when the operation ends. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/macro.h"

static void human(char *buf, size_t n, double bytes)
{
	const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int i = 0;
	while (bytes >= 1024 && i < 4)
		bytes /= 1024, i++;
	snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", bytes, u[i]);
}

static void show(void *ud, const sbx_progress *p)
{
	(void)ud;
	if (p->done) {
		fputs("\r\033[K", stderr);
		return;
	}
	double secs = p->elapsed_ms / 1000.0;
	char done[32], total[32] = "", rate[32] = "", eta[32] = "";
	human(done, sizeof(done), (double)p->bytes_done);
	if (p->bytes_total)
		human(total, sizeof(total), (double)p->bytes_total);
	if (secs > 0.2 && p->bytes_done) {
		human(rate, sizeof(rate), (double)p->bytes_done / secs);
		if (p->bytes_total > p->bytes_done)
			snprintf(eta, sizeof(eta), ", about %.0f s left",
				 (double)(p->bytes_total - p->bytes_done) / ((double)p->bytes_done / secs));
	} else if (secs > 0.2 && p->files_total > p->files_done && p->files_done)
		snprintf(eta, sizeof(eta), ", about %.0f s left",
			 (double)(p->files_total - p->files_done) * secs / (double)p->files_done);
	char files[64];
	if (p->files_total)
		snprintf(files, sizeof(files), "%llu of %llu", (unsigned long long)p->files_done,
			 (unsigned long long)p->files_total);
	else
		snprintf(files, sizeof(files), "%llu", (unsigned long long)p->files_done);
	bool layers = streq(p->op, "export") || streq(p->op, "import") || streq(p->op, "gc") ||
		      streq(p->op, "push") || streq(p->op, "pull");
	fprintf(stderr, "\r\033[K%s: %s%s%s, %s %s%s%s%s%s", p->op, done, total[0] ? " of " : "", total,
		files, layers ? "layers" : "files", rate[0] ? ", " : "", rate, rate[0] ? "/s" : "", eta);
	fflush(stderr);
}

void cli_progress_setup(cli *c)
{
	if (c->ctx && !c->json && isatty(2))
		sbx_ctx_set_progress(c->ctx, show, NULL);
}
