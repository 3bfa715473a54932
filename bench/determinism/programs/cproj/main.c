#include <stdio.h>
#include "proj.h"
int main(void)
{
	double a[4] = {1, 2, 3, 4}, b[4] = {4, 3, 2, 1};
	char s[] = "determinism";
	int v[6] = {5, 3, 9, 1, 7, 2};
	str_reverse(s);
	isort(v, 6);
	printf("dot=%g rev=%s fnv=%08x sorted=%d,%d,%d,%d,%d,%d\n", vec_dot(a, b, 4), s, fnv1a("sbx"), v[0], v[1], v[2], v[3], v[4], v[5]);
	return 0;
}
