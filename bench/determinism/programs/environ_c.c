/* The raw environment block as execve() delivered it: every entry verbatim
 * (shells and Python drop entries without '=', so they would not show a
 * malformed one), with its length. Exits 3 if an entry has no '=': the
 * block the runtime built is then broken (a determinism bug and a leak). */
#include <stdio.h>
#include <string.h>
extern char **environ;
int main(void)
{
	int i = 0, bad = 0;
	for (char **e = environ; *e; e++, i++) {
		if (!strchr(*e, '='))
			bad++;
		printf("%d len %zu: ", i, strlen(*e));
		for (const char *p = *e; *p; p++)
			if (*p >= 32 && *p < 127)
				putchar(*p);
			else
				printf("\\x%02x", (unsigned char)*p);
		printf("\n");
	}
	if (bad)
		printf("MALFORMED: %d entries without '='\n", bad);
	return bad ? 3 : 0;
}
