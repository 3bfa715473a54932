#include <string.h>
#include "proj.h"
void str_reverse(char *s)
{
	for (size_t i = 0, j = strlen(s); i + 1 < j; i++, j--) { char t = s[i]; s[i] = s[j - 1]; s[j - 1] = t; }
}
