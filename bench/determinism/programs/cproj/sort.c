#include "proj.h"
void isort(int *v, size_t n)
{
	for (size_t i = 1; i < n; i++) { int x = v[i]; size_t j = i; while (j > 0 && v[j - 1] > x) { v[j] = v[j - 1]; j--; } v[j] = x; }
}
