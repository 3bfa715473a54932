#pragma once
#include <stddef.h>
#include <stdint.h>
double vec_dot(const double *a, const double *b, size_t n);
void str_reverse(char *s);
uint32_t fnv1a(const char *s);
void isort(int *v, size_t n);
