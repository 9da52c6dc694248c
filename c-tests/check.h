// The soft check of the C tests: a failed condition is counted and reported with its file and
// line, and the test goes on, so one run lists every failure. Each test prints `checks` and
// `failures` at the end and exits non-zero when `failures` is not zero.
#pragma once

#include <stdio.h>

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                              \
    do {                                                                         \
        checks++;                                                                \
        if (!(cond)) {                                                           \
            failures++;                                                          \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                        \
    } while (0)
