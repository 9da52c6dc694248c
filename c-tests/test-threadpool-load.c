// A thread pool under load: a pool with four times as many threads as the machine has cores,
// while busy processes take every core, computes a chain of products correctly; pause and
// resume from another thread during the computations, and an abort callback, do what they say;
// and once idle, the pool uses no CPU.
#include <ggml-cpu.h>
#include <ggml.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N 64
#define DEPTH 64

static int failures;

#define CHECK(cond, ...)                            \
    do {                                            \
        if (!(cond)) {                              \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);           \
            fprintf(stderr, "\n");                  \
            failures++;                             \
        }                                           \
    } while (0)

static double cpu_seconds(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

static void sleep_ms(long ms) {
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

// a chain x_{k+1} = tanh(w · x_k): every node split among the team
static struct ggml_tensor * chain(struct ggml_context * ctx, struct ggml_cgraph * g) {
    struct ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, N);
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, 8);
    for (int i = 0; i < N * N; i++) {
        ((float *) w->data)[i] = (float) ((i * 37) % 101 - 50) / 400.0f;
    }
    for (int i = 0; i < N * 8; i++) {
        ((float *) x->data)[i] = (float) ((i * 13) % 17 - 8) / 8.0f;
    }
    for (int k = 0; k < DEPTH; k++) {
        x = ggml_tanh(ctx, ggml_mul_mat(ctx, w, x));
    }
    ggml_build_forward_expand(g, x);
    return x;
}

static atomic_int abort_after;

static bool abort_soon(void * data) {
    (void) data;
    return atomic_fetch_sub(&abort_after, 1) <= 0;
}

static atomic_bool toggling;

static void * toggle(void * pool) {
    int n = 0;
    while (atomic_load(&toggling)) {
        ggml_threadpool_pause(pool);
        sleep_ms(1);
        ggml_threadpool_resume(pool);
        n++;
    }
    return (void *) (intptr_t) n;
}

int main(void) {
    alarm(120);
    int cores = (int) sysconf(_SC_NPROCESSORS_ONLN);
    int n_threads = 4 * cores;

    // busy processes on every core for the whole test
    pid_t busy[64];
    int n_busy = cores < 64 ? cores : 64;
    for (int i = 0; i < n_busy; i++) {
        busy[i] = fork();
        if (busy[i] == 0) {
            alarm(120);
            for (volatile unsigned long spin = 0;; spin++) {
            }
        }
    }

    ggml_cpu_init();
    struct ggml_context * ctx = ggml_init((struct ggml_init_params) { 64 << 20, NULL, false });
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    struct ggml_tensor * out = chain(ctx, g);

    // the result of a team of one
    CHECK(ggml_graph_compute_with_ctx(ctx, g, 1) == GGML_STATUS_SUCCESS, "one thread");
    float want[N * 8];
    memcpy(want, out->data, sizeof want);

    struct ggml_threadpool_params tpp = ggml_threadpool_params_default(n_threads);
    struct ggml_threadpool * pool = ggml_threadpool_new(&tpp);
    struct ggml_cplan plan = ggml_graph_plan(g, n_threads, pool);
    void * work = malloc(plan.work_size + 1);
    plan.work_data = work;

    // pause and resume from another thread while graphs run
    atomic_store(&toggling, true);
    pthread_t toggler;
    pthread_create(&toggler, NULL, toggle, pool);
    for (int r = 0; r < 20; r++) {
        memset(out->data, 0, sizeof want);
        CHECK(ggml_graph_compute(g, &plan) == GGML_STATUS_SUCCESS, "run %d", r);
        CHECK(memcmp(out->data, want, sizeof want) == 0, "run %d: %d threads differ from one", r, n_threads);
    }
    atomic_store(&toggling, false);
    void * toggles;
    pthread_join(toggler, &toggles);
    CHECK((intptr_t) toggles > 0, "no pause/resume happened");

    // an abort callback that says stop after a few nodes, then one that never does
    atomic_store(&abort_after, 5);
    plan.abort_callback = abort_soon;
    CHECK(ggml_graph_compute(g, &plan) == GGML_STATUS_ABORTED, "the abort callback was not obeyed");
    plan.abort_callback = NULL;
    memset(out->data, 0, sizeof want);
    CHECK(ggml_graph_compute(g, &plan) == GGML_STATUS_SUCCESS, "after an abort");
    CHECK(memcmp(out->data, want, sizeof want) == 0, "after an abort: wrong result");

    for (int i = 0; i < n_busy; i++) {
        kill(busy[i], SIGKILL);
        waitpid(busy[i], NULL, 0);
    }

    // idle: after its workers have stopped polling, the pool uses no CPU, running or paused
    sleep_ms(300);
    double before = cpu_seconds();
    sleep_ms(1000);
    double idle = cpu_seconds() - before;
    CHECK(idle < 0.05, "an idle pool of %d threads used %.3f s of CPU in 1 s", n_threads, idle);
    ggml_threadpool_pause(pool);
    before = cpu_seconds();
    sleep_ms(500);
    double paused = cpu_seconds() - before;
    CHECK(paused < 0.05, "a paused pool used %.3f s of CPU in 0.5 s", paused);

    printf("threadpool under load: %d threads on %d cores, %ld pause/resume pairs, idle %.3f s, paused %.3f s of CPU\n",
           n_threads, cores, (long) (intptr_t) toggles, idle, paused);
    ggml_threadpool_free(pool);
    free(work);
    ggml_free(ctx);
    if (failures) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    return 0;
}
