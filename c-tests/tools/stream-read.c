// How fast this machine streams memory into the cores: the roofline of token generation, which
// reads every weight once per token. Sums a buffer much larger than the last-level cache with
// THREADS threads, each its own contiguous part, and prints the best of a few passes in GB/s
// (10^9 bytes per second).
//
//   stream-read [THREADS [MIB]]     (defaults: 1 thread, 1024 MiB)
//
// The buffer asks for transparent huge pages, as llama.cpp's weights mapped from a file on a
// machine with THP get them, so that page walks do not lower the figure. Built with the
// vector width under test (-mavx2 for AVX2 machines, -march=native otherwise): the compiler
// vectorizes the sum.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define PASSES 5

struct part {
    const uint64_t *data;
    size_t n;
    uint64_t sum;
};

static pthread_barrier_t start;

static void *sum_part(void *arg) {
    struct part *p = arg;
    pthread_barrier_wait(&start);
    uint64_t sum = 0;
    for (size_t i = 0; i < p->n; ++i) {
        sum += p->data[i];
    }
    p->sum = sum;
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    size_t mib = argc > 2 ? (size_t) atol(argv[2]) : 1024;
    if (threads < 1 || threads > 256 || mib < 64) {
        fprintf(stderr, "usage: stream-read [THREADS (1..256) [MIB (>= 64)]]\n");
        return 2;
    }
    size_t bytes = mib << 20;
    uint64_t *data = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) {
        perror("stream-read: mmap");
        return 1;
    }
    madvise(data, bytes, MADV_HUGEPAGE);
    size_t n = bytes / sizeof(uint64_t);
    for (size_t i = 0; i < n; ++i) {
        data[i] = i;
    }

    double best = 0.0;
    uint64_t check = 0;
    for (int pass = 0; pass < PASSES; ++pass) {
        pthread_t tid[256];
        struct part parts[256];
        pthread_barrier_init(&start, NULL, (unsigned) threads + 1);
        size_t each = n / (size_t) threads;
        for (int t = 0; t < threads; ++t) {
            parts[t] = (struct part){ data + (size_t) t * each, t == threads - 1 ? n - (size_t) t * each : each, 0 };
            pthread_create(&tid[t], NULL, sum_part, &parts[t]);
        }
        double t0 = now();
        pthread_barrier_wait(&start);
        for (int t = 0; t < threads; ++t) {
            pthread_join(tid[t], NULL);
            check += parts[t].sum;
        }
        double gbps = (double) bytes / (now() - t0) / 1e9;
        best = gbps > best ? gbps : best;
        pthread_barrier_destroy(&start);
    }
    // the sums are printed to stderr so that the compiler cannot drop the loop
    fprintf(stderr, "stream-read: checksum %llu\n", (unsigned long long) check);
    printf("%.1f\n", best);
    munmap(data, bytes);
    return 0;
}
