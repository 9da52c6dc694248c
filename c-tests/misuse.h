// Death-test harness for the misuse suites (c-tests/test-misuse-*.c): each case runs in a
// forked child with stderr captured; it passes only if the child dies of SIGABRT (not a
// segfault, not a clean exit, not a hang) and what it printed names the exported function
// and says what was wrong. Header-only: each test-*.c is its own executable.
#ifndef GGML_RS_MISUSE_H
#define GGML_RS_MISUSE_H

#include "ggml.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

// A child that neither aborts nor exits within this many seconds counts as hung.
#define MISUSE_TIMEOUT_S 20

static int misuse_cases = 0;
static int misuse_failed = 0;

// The child's abort hook: the message alone, so that a check cannot be satisfied by a name
// in a backtrace, and so that no time goes into symbolizing one.
static void misuse_print(const char * message) {
    fprintf(stderr, "%s\n", message);
    fflush(stderr);
}

// Runs `fn` in a child and checks its death. `func` (the function or operation the message
// names) and `what` (the bad argument or the broken condition) must both appear in the
// abort message the child printed.
static void misuse_case(const char * name, void (*fn)(void), const char * func, const char * what) {
    misuse_cases++;
    fflush(stdout);
    fflush(stderr);
    int pipefd[2];
    if (pipe(pipefd) != 0) { perror("pipe"); exit(2); }
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); exit(2); }
    if (pid == 0) {
        // No core files: a suite of deliberate aborts would otherwise litter the disk.
        struct rlimit no_core = { 0, 0 };
        setrlimit(RLIMIT_CORE, &no_core);
        alarm(MISUSE_TIMEOUT_S);
        dup2(pipefd[1], STDERR_FILENO);
        close(pipefd[0]);
        close(pipefd[1]);
        ggml_set_abort_callback(misuse_print);
        fn();
        _exit(0);
    }
    close(pipefd[1]);
    static char buf[1 << 16];
    size_t len = 0;
    ssize_t n;
    while ((n = read(pipefd[0], buf + len, sizeof(buf) - 1 - len)) > 0) {
        len += (size_t) n;
        if (len == sizeof(buf) - 1) {
            // keep draining so the child never blocks on a full pipe; the head is what matters
            char sink[4096];
            while (read(pipefd[0], sink, sizeof(sink)) > 0) {}
            break;
        }
    }
    buf[len] = '\0';
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);

    const char * why = NULL;
    char why_buf[128];
    if (WIFEXITED(status)) {
        snprintf(why_buf, sizeof(why_buf), "exited with status %d instead of aborting", WEXITSTATUS(status));
        why = why_buf;
    } else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGABRT) {
        snprintf(why_buf, sizeof(why_buf), "killed by signal %d (%s) instead of SIGABRT",
                 WTERMSIG(status), WTERMSIG(status) == SIGALRM ? "hung" : strsignal(WTERMSIG(status)));
        why = why_buf;
    } else if (func && !strstr(buf, func)) {
        snprintf(why_buf, sizeof(why_buf), "message does not name '%s'", func);
        why = why_buf;
    } else if (what && !strstr(buf, what)) {
        snprintf(why_buf, sizeof(why_buf), "message does not mention '%s'", what);
        why = why_buf;
    }
    if (why) {
        misuse_failed++;
        // the first line is the message; the backtrace after it is noise in a report
        const char * eol = strchr(buf, '\n');
        int first = eol ? (int) (eol - buf) : (int) len;
        printf("FAIL %-44s %s; stderr: %.*s\n", name, why, first, buf);
    } else {
        const char * eol = strchr(buf, '\n');
        int first = eol ? (int) (eol - buf) : (int) len;
        printf("ok   %-44s %.*s\n", name, first > 110 ? 110 : first, buf);
    }
}

// MISUSE(name) { body } defines what a child does; the suite's main runs each with
// RUN(name, func, what), so the report follows main's order.
#define MISUSE(name) static void misuse_##name(void)
#define RUN(name, func, what) misuse_case(#name, misuse_##name, func, what)

static int misuse_report(const char * suite) {
    printf("%s: %d cases, %d failed\n", suite, misuse_cases, misuse_failed);
    return misuse_failed == 0 ? 0 : 1;
}

// A context for building graphs in a child; the child never frees it (it dies anyway).
static inline struct ggml_context * misuse_ctx(size_t mem_size, bool no_alloc) {
    struct ggml_init_params params = { mem_size, NULL, no_alloc };
    return ggml_init(params);
}

#endif
