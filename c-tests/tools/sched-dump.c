// sched-dump: runs representative graphs through the backend scheduler over test backends
// and prints, per scenario, the number of splits and copies, the backend of every leaf and
// node, each node's sources after splitting (which names the scheduler's input copies), the
// compute buffer sizes and the nodes each backend was asked to compute, so that two ggml
// implementations can be compared with diff.
//
// Usage: sched-dump [scenario...]   (no argument: all scenarios, in order)
//
// Only public headers are included. The test backends are defined through the backend
// interface tables, whose layout is part of the ABI (backend plugins are built against it):
// the structs below mirror src/ggml-backend-impl.h of ggml 0.25.1 (checked against
// /work/shared/abi/layouts.txt: ggml_backend_i 128 bytes, ggml_backend 152,
// ggml_backend_device_i 120, ggml_backend_device 136, ggml_backend_buffer_i 88,
// ggml_backend_buffer 120, ggml_backend_buffer_type_i 48, ggml_backend_buffer_type 64).
// The devices compute nothing: their graph_compute only records the nodes it receives.
// Every tensor is named, so the output holds no pointers.

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------------------------
// ABI mirrors of the backend interface (ggml-backend-impl.h)

struct ggml_backend_buffer_type_i {
    const char * (*get_name)(ggml_backend_buffer_type_t buft);
    ggml_backend_buffer_t (*alloc_buffer)(ggml_backend_buffer_type_t buft, size_t size);
    size_t (*get_alignment)(ggml_backend_buffer_type_t buft);
    size_t (*get_max_size)(ggml_backend_buffer_type_t buft);
    size_t (*get_alloc_size)(ggml_backend_buffer_type_t buft, const struct ggml_tensor * tensor);
    bool (*is_host)(ggml_backend_buffer_type_t buft);
};

struct ggml_backend_buffer_type {
    struct ggml_backend_buffer_type_i iface;
    ggml_backend_dev_t device;
    void * context;
};

struct ggml_backend_buffer_i {
    void (*free_buffer)(ggml_backend_buffer_t buffer);
    void * (*get_base)(ggml_backend_buffer_t buffer);
    enum ggml_status (*init_tensor)(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor);
    void (*memset_tensor)(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, uint8_t value, size_t offset, size_t size);
    void (*set_tensor)(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, const void * data, size_t offset, size_t size);
    void (*get_tensor)(ggml_backend_buffer_t buffer, const struct ggml_tensor * tensor, void * data, size_t offset, size_t size);
    void (*set_tensor_2d)(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, const void * data, size_t offset,
                          size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data);
    void (*get_tensor_2d)(ggml_backend_buffer_t buffer, const struct ggml_tensor * tensor, void * data, size_t offset,
                          size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data);
    bool (*cpy_tensor)(ggml_backend_buffer_t buffer, const struct ggml_tensor * src, struct ggml_tensor * dst);
    void (*clear)(ggml_backend_buffer_t buffer, uint8_t value);
    void (*reset)(ggml_backend_buffer_t buffer);
};

struct ggml_backend_buffer {
    struct ggml_backend_buffer_i iface;
    ggml_backend_buffer_type_t buft;
    void * context;
    size_t size;
    enum ggml_backend_buffer_usage usage;
};

struct ggml_backend_i {
    const char * (*get_name)(ggml_backend_t backend);
    void (*free)(ggml_backend_t backend);
    void (*set_tensor_async)(ggml_backend_t backend, struct ggml_tensor * tensor, const void * data, size_t offset, size_t size);
    void (*get_tensor_async)(ggml_backend_t backend, const struct ggml_tensor * tensor, void * data, size_t offset, size_t size);
    void (*set_tensor_2d_async)(ggml_backend_t backend, struct ggml_tensor * tensor, const void * data, size_t offset,
                                size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data);
    void (*get_tensor_2d_async)(ggml_backend_t backend, const struct ggml_tensor * tensor, void * data, size_t offset,
                                size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data);
    bool (*cpy_tensor_async)(ggml_backend_t backend_src, ggml_backend_t backend_dst, const struct ggml_tensor * src,
                             struct ggml_tensor * dst);
    void (*synchronize)(ggml_backend_t backend);
    ggml_backend_graph_plan_t (*graph_plan_create)(ggml_backend_t backend, const struct ggml_cgraph * cgraph);
    void (*graph_plan_free)(ggml_backend_t backend, ggml_backend_graph_plan_t plan);
    void (*graph_plan_update)(ggml_backend_t backend, ggml_backend_graph_plan_t plan, const struct ggml_cgraph * cgraph);
    enum ggml_status (*graph_plan_compute)(ggml_backend_t backend, ggml_backend_graph_plan_t plan);
    enum ggml_status (*graph_compute)(ggml_backend_t backend, struct ggml_cgraph * cgraph);
    void (*event_record)(ggml_backend_t backend, ggml_backend_event_t event);
    void (*event_wait)(ggml_backend_t backend, ggml_backend_event_t event);
    void (*graph_optimize)(ggml_backend_t backend, struct ggml_cgraph * cgraph, void * params);
};

struct ggml_backend {
    ggml_guid_t guid;
    struct ggml_backend_i iface;
    ggml_backend_dev_t device;
    void * context;
};

struct ggml_backend_device_i {
    const char * (*get_name)(ggml_backend_dev_t dev);
    const char * (*get_description)(ggml_backend_dev_t dev);
    void (*get_memory)(ggml_backend_dev_t dev, size_t * free, size_t * total);
    enum ggml_backend_dev_type (*get_type)(ggml_backend_dev_t dev);
    void (*get_props)(ggml_backend_dev_t dev, struct ggml_backend_dev_props * props);
    ggml_backend_t (*init_backend)(ggml_backend_dev_t dev, const char * params);
    ggml_backend_buffer_type_t (*get_buffer_type)(ggml_backend_dev_t dev);
    ggml_backend_buffer_type_t (*get_host_buffer_type)(ggml_backend_dev_t dev);
    ggml_backend_buffer_t (*buffer_from_host_ptr)(ggml_backend_dev_t dev, void * ptr, size_t size, size_t max_tensor_size);
    bool (*supports_op)(ggml_backend_dev_t dev, const struct ggml_tensor * op);
    bool (*supports_buft)(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft);
    bool (*offload_op)(ggml_backend_dev_t dev, const struct ggml_tensor * op);
    ggml_backend_event_t (*event_new)(ggml_backend_dev_t dev);
    void (*event_free)(ggml_backend_dev_t dev, ggml_backend_event_t event);
    void (*event_synchronize)(ggml_backend_dev_t dev, ggml_backend_event_t event);
};

struct ggml_backend_device {
    struct ggml_backend_device_i iface;
    ggml_backend_reg_t reg;
    void * context;
};

struct ggml_backend_event {
    struct ggml_backend_device * device;
    void * context;
};

// Exported by libggml-base, declared only in ggml-backend-impl.h.
ggml_backend_buffer_t ggml_backend_buffer_init(ggml_backend_buffer_type_t buft, struct ggml_backend_buffer_i iface,
                                               void * context, size_t size);

// ---------------------------------------------------------------------------------------------
// Test devices

struct test_dev {
    const char * name;
    enum ggml_backend_dev_type type;
    bool ops[GGML_OP_COUNT];
    bool offload[GGML_OP_COUNT];
    bool own_buft;        // a non-host buffer type of its own; else the CPU buffer type
    bool reads_host;      // can also read the CPU buffer type
    bool events;          // makes events, and logs what is done with them
    char buft_name[64];
    struct ggml_backend_buffer_type buft;
    struct ggml_backend_device dev;
    struct ggml_backend backend;
};

static struct test_dev * dev_ctx(ggml_backend_dev_t dev) { return (struct test_dev *) dev->context; }

static const char * t_dev_name(ggml_backend_dev_t dev) { return dev_ctx(dev)->name; }
static enum ggml_backend_dev_type t_dev_type(ggml_backend_dev_t dev) { return dev_ctx(dev)->type; }

static ggml_backend_buffer_type_t t_dev_buft(ggml_backend_dev_t dev) {
    struct test_dev * d = dev_ctx(dev);
    return d->own_buft ? &d->buft : ggml_backend_cpu_buffer_type();
}

static bool t_supports_op(ggml_backend_dev_t dev, const struct ggml_tensor * op) {
    return dev_ctx(dev)->ops[op->op];
}

static bool t_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) {
    struct test_dev * d = dev_ctx(dev);
    if (buft == t_dev_buft(dev)) {
        return true;
    }
    return d->reads_host && buft == ggml_backend_cpu_buffer_type();
}

static bool t_offload_op(ggml_backend_dev_t dev, const struct ggml_tensor * op) {
    return dev_ctx(dev)->offload[op->op];
}

static const char * t_backend_name(ggml_backend_t backend) { return ((struct test_dev *) backend->context)->name; }

static ggml_backend_event_t t_event_new(ggml_backend_dev_t dev) {
    if (!dev_ctx(dev)->events) {
        return NULL;
    }
    struct ggml_backend_event * e = calloc(1, sizeof(*e));
    e->device = dev;
    return e;
}

static void t_event_free(ggml_backend_dev_t dev, ggml_backend_event_t event) {
    (void) dev;
    free(event);
}

static void t_event_synchronize(ggml_backend_dev_t dev, ggml_backend_event_t event) {
    (void) event;
    printf("  event synchronize on %s\n", dev_ctx(dev)->name);
}

static void t_event_record(ggml_backend_t backend, ggml_backend_event_t event) {
    printf("  event record %s (device %s)\n", t_backend_name(backend), dev_ctx(event->device)->name);
}

static void t_event_wait(ggml_backend_t backend, ggml_backend_event_t event) {
    printf("  event wait %s (device %s)\n", t_backend_name(backend), dev_ctx(event->device)->name);
}

static enum ggml_status t_graph_compute(ggml_backend_t backend, struct ggml_cgraph * cgraph) {
    printf("  compute %s:", t_backend_name(backend));
    for (int i = 0; i < ggml_graph_n_nodes(cgraph); i++) {
        printf(" %s", ggml_graph_node(cgraph, i)->name);
    }
    printf("\n");
    return GGML_STATUS_SUCCESS;
}

// The own buffer type: plain host memory that does not say so.
static const char * t_buft_name(ggml_backend_buffer_type_t buft) { return ((struct test_dev *) buft->context)->buft_name; }
static size_t t_buft_alignment(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return 32;
}

static void t_buf_free(ggml_backend_buffer_t buffer) { free(buffer->context); }
static void * t_buf_base(ggml_backend_buffer_t buffer) { return buffer->context; }
static void t_buf_memset(ggml_backend_buffer_t buffer, struct ggml_tensor * t, uint8_t value, size_t offset, size_t size) {
    (void) buffer;
    memset((char *) t->data + offset, value, size);
}
static void t_buf_set(ggml_backend_buffer_t buffer, struct ggml_tensor * t, const void * data, size_t offset, size_t size) {
    (void) buffer;
    memcpy((char *) t->data + offset, data, size);
}
static void t_buf_get(ggml_backend_buffer_t buffer, const struct ggml_tensor * t, void * data, size_t offset, size_t size) {
    (void) buffer;
    memcpy(data, (const char *) t->data + offset, size);
}
static void t_buf_clear(ggml_backend_buffer_t buffer, uint8_t value) { memset(buffer->context, value, buffer->size); }

static ggml_backend_buffer_t t_buft_alloc(ggml_backend_buffer_type_t buft, size_t size) {
    struct ggml_backend_buffer_i iface = {
        /* .free_buffer   = */ t_buf_free,
        /* .get_base      = */ t_buf_base,
        /* .init_tensor   = */ NULL,
        /* .memset_tensor = */ t_buf_memset,
        /* .set_tensor    = */ t_buf_set,
        /* .get_tensor    = */ t_buf_get,
        /* .set_tensor_2d = */ NULL,
        /* .get_tensor_2d = */ NULL,
        /* .cpy_tensor    = */ NULL,
        /* .clear         = */ t_buf_clear,
        /* .reset         = */ NULL,
    };
    void * mem = aligned_alloc(64, ((size + 63) / 64) * 64 + 64);
    memset(mem, 0, ((size + 63) / 64) * 64 + 64);
    return ggml_backend_buffer_init(buft, iface, mem, size);
}

static const enum ggml_op always[] = { GGML_OP_NONE, GGML_OP_VIEW, GGML_OP_RESHAPE, GGML_OP_PERMUTE, GGML_OP_TRANSPOSE };

static struct test_dev * test_dev_new(const char * name, enum ggml_backend_dev_type type, bool own_buft,
                                      const enum ggml_op * ops, int n_ops) {
    struct test_dev * d = calloc(1, sizeof(*d));
    d->name = name;
    d->type = type;
    d->own_buft = own_buft;
    snprintf(d->buft_name, sizeof(d->buft_name), "%s_buf", name);
    for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++) {
        d->ops[always[i]] = true;
    }
    if (n_ops < 0) {
        for (int i = 0; i < GGML_OP_COUNT; i++) {
            d->ops[i] = true;
        }
    }
    for (int i = 0; i < n_ops; i++) {
        d->ops[ops[i]] = true;
    }

    d->buft.iface.get_name = t_buft_name;
    d->buft.iface.alloc_buffer = t_buft_alloc;
    d->buft.iface.get_alignment = t_buft_alignment;
    d->buft.device = &d->dev;
    d->buft.context = d;

    d->dev.iface.get_name = t_dev_name;
    d->dev.iface.get_description = t_dev_name;
    d->dev.iface.get_type = t_dev_type;
    d->dev.iface.get_buffer_type = t_dev_buft;
    d->dev.iface.supports_op = t_supports_op;
    d->dev.iface.supports_buft = t_supports_buft;
    d->dev.iface.offload_op = t_offload_op;
    d->dev.iface.event_new = t_event_new;
    d->dev.iface.event_free = t_event_free;
    d->dev.iface.event_synchronize = t_event_synchronize;
    d->dev.context = d;

    d->backend.iface.get_name = t_backend_name;
    d->backend.iface.graph_compute = t_graph_compute;
    d->backend.iface.event_record = t_event_record;
    d->backend.iface.event_wait = t_event_wait;
    d->backend.device = &d->dev;
    d->backend.context = d;
    return d;
}

static const enum ggml_op gpu_ops[] = {
    GGML_OP_MUL_MAT, GGML_OP_ADD, GGML_OP_MUL, GGML_OP_SCALE, GGML_OP_RMS_NORM, GGML_OP_SOFT_MAX, GGML_OP_CPY, GGML_OP_CONT,
};
#define N_GPU_OPS ((int) (sizeof(gpu_ops) / sizeof(gpu_ops[0])))

static struct test_dev * gpu0, * gpu1, * blas, * cpu;

static void make_devices(void) {
    gpu0 = test_dev_new("GPU0", GGML_BACKEND_DEVICE_TYPE_GPU, true, gpu_ops, N_GPU_OPS);
    gpu0->offload[GGML_OP_MUL_MAT] = true;
    // The second accelerator lacks SOFT_MAX (the last entry but two).
    gpu1 = test_dev_new("GPU1", GGML_BACKEND_DEVICE_TYPE_GPU, true, gpu_ops, N_GPU_OPS);
    gpu1->ops[GGML_OP_SOFT_MAX] = false;
    const enum ggml_op blas_ops[] = { GGML_OP_MUL_MAT };
    blas = test_dev_new("BLAS", GGML_BACKEND_DEVICE_TYPE_ACCEL, false, blas_ops, 1);
    cpu = test_dev_new("CPU", GGML_BACKEND_DEVICE_TYPE_CPU, false, NULL, -1);
}

// ---------------------------------------------------------------------------------------------
// Scenario helpers

static struct ggml_context * ctx_new(void) {
    struct ggml_init_params p = { 16 * 1024 * 1024, NULL, true };
    return ggml_init(p);
}

static struct ggml_tensor * named(struct ggml_tensor * t, const char * name) {
    ggml_set_name(t, name);
    return t;
}

static struct ggml_tensor * input(struct ggml_context * ctx, const char * name, enum ggml_type type, int64_t ne0, int64_t ne1) {
    struct ggml_tensor * t = named(ggml_new_tensor_2d(ctx, type, ne0, ne1), name);
    ggml_set_input(t);
    return t;
}

static ggml_backend_buffer_t weights_in(struct ggml_context * wctx, ggml_backend_buffer_type_t buft) {
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, buft);
    if (buf) {
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    }
    return buf;
}

static const char * backend_of(ggml_backend_sched_t sched, struct ggml_tensor * t) {
    ggml_backend_t b = ggml_backend_sched_get_tensor_backend(sched, t);
    return b ? ggml_backend_name(b) : "NULL";
}

static void dump(ggml_backend_sched_t sched, struct ggml_cgraph * graph) {
    printf("  n_splits=%d n_copies=%d\n", ggml_backend_sched_get_n_splits(sched), ggml_backend_sched_get_n_copies(sched));
    (void) graph;
}

static void dump_nodes(ggml_backend_sched_t sched, struct ggml_cgraph * graph, struct ggml_tensor ** leafs, int n_leafs) {
    for (int i = 0; i < n_leafs; i++) {
        printf("  leaf %s -> %s\n", leafs[i]->name, backend_of(sched, leafs[i]));
    }
    for (int i = 0; i < ggml_graph_n_nodes(graph); i++) {
        struct ggml_tensor * n = ggml_graph_node(graph, i);
        printf("  node %d %s %s -> %s [", i, n->name, ggml_op_desc(n), backend_of(sched, n));
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (n->src[j]) {
                printf("%s%s", j ? ", " : "", n->src[j]->name);
            }
        }
        printf("]\n");
    }
}

static void dump_sizes(ggml_backend_sched_t sched) {
    for (int i = 0; i < ggml_backend_sched_get_n_backends(sched); i++) {
        ggml_backend_t b = ggml_backend_sched_get_backend(sched, i);
        printf("  buffer %s (%s): %zu\n", ggml_backend_name(b),
               ggml_backend_buft_name(ggml_backend_sched_get_buffer_type(sched, b)),
               ggml_backend_sched_get_buffer_size(sched, b));
    }
}

static ggml_backend_sched_t sched_new(struct test_dev ** devs, int n, bool parallel, bool op_offload) {
    ggml_backend_t backends[8];
    printf("  backends:");
    for (int i = 0; i < n; i++) {
        backends[i] = &devs[i]->backend;
        printf(" %s", devs[i]->name);
    }
    printf(" parallel=%d op_offload=%d\n", parallel, op_offload);
    return ggml_backend_sched_new(backends, NULL, n, 1024, parallel, op_offload);
}

// Allocates, dumps and computes `graph`.
static void run(ggml_backend_sched_t sched, struct ggml_cgraph * graph, struct ggml_tensor ** leafs, int n_leafs) {
    if (!ggml_backend_sched_alloc_graph(sched, graph)) {
        printf("  alloc_graph failed\n");
        return;
    }
    dump(sched, graph);
    dump_nodes(sched, graph, leafs, n_leafs);
    dump_sizes(sched);
    enum ggml_status st = ggml_backend_sched_graph_compute(sched, graph);
    printf("  status=%d\n", (int) st);
}

// ---------------------------------------------------------------------------------------------
// Scenarios

// Weights on GPU0, an op GPU0 lacks (SQR) in the middle: three splits and their copies.
static void scenario_chain(void) {
    struct test_dev * devs[] = { gpu0, cpu };
    ggml_backend_sched_t sched = sched_new(devs, 2, false, true);
    struct ggml_context * ctx = ctx_new();
    struct ggml_context * wctx = ctx_new();
    struct ggml_tensor * w = named(ggml_new_tensor_2d(wctx, GGML_TYPE_F32, 4, 3), "w");
    ggml_backend_buffer_t wbuf = weights_in(wctx, &gpu0->buft);
    struct ggml_tensor * x = input(ctx, "x", GGML_TYPE_F32, 4, 2);
    struct ggml_tensor * h = named(ggml_mul_mat(ctx, w, x), "h");
    struct ggml_tensor * h2 = named(ggml_add(ctx, h, h), "h2");
    struct ggml_tensor * y = named(ggml_sqr(ctx, h2), "y");
    struct ggml_tensor * z = named(ggml_mul(ctx, y, h2), "z");
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, z);
    struct ggml_tensor * leafs[] = { w, x };
    run(sched, g, leafs, 2);
    ggml_backend_sched_free(sched);
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
    ggml_free(ctx);
}

// Weights in host memory; GPU0 asks to take MUL_MAT over when op_offload is on.
static void scenario_offload(bool op_offload) {
    struct test_dev * devs[] = { gpu0, cpu };
    ggml_backend_sched_t sched = sched_new(devs, 2, false, op_offload);
    struct ggml_context * ctx = ctx_new();
    struct ggml_context * wctx = ctx_new();
    struct ggml_tensor * w = named(ggml_new_tensor_2d(wctx, GGML_TYPE_F32, 8, 8), "w");
    struct ggml_tensor * b = named(ggml_new_tensor_1d(wctx, GGML_TYPE_F32, 8), "b");
    ggml_backend_buffer_t wbuf = weights_in(wctx, ggml_backend_cpu_buffer_type());
    struct ggml_tensor * x = input(ctx, "x", GGML_TYPE_F32, 8, 4);
    struct ggml_tensor * h = named(ggml_mul_mat(ctx, w, x), "h");
    struct ggml_tensor * hb = named(ggml_add(ctx, h, b), "hb");
    struct ggml_tensor * s = named(ggml_scale(ctx, hb, 0.5f), "s");
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, s);
    struct ggml_tensor * leafs[] = { w, b, x };
    run(sched, g, leafs, 3);
    ggml_backend_sched_free(sched);
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
    ggml_free(ctx);
}

static void scenario_offload_on(void) { scenario_offload(true); }
static void scenario_offload_off(void) { scenario_offload(false); }

// A BLAS-like backend on the CPU buffer type: a user's CPU assignment is upgraded to it.
static void scenario_upgrade(void) {
    struct test_dev * devs[] = { blas, cpu };
    ggml_backend_sched_t sched = sched_new(devs, 2, false, true);
    struct ggml_context * ctx = ctx_new();
    struct ggml_tensor * xa = input(ctx, "xa", GGML_TYPE_F32, 4, 3);
    struct ggml_tensor * xb = input(ctx, "xb", GGML_TYPE_F32, 4, 2);
    struct ggml_tensor * p = named(ggml_mul_mat(ctx, xa, xb), "p");
    struct ggml_tensor * q = named(ggml_sqr(ctx, p), "q");
    struct ggml_tensor * r = named(ggml_mul_mat(ctx, q, q), "r");
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, r);
    ggml_backend_sched_set_tensor_backend(sched, p, &cpu->backend);
    struct ggml_tensor * leafs[] = { xa, xb };
    run(sched, g, leafs, 2);
    ggml_backend_sched_free(sched);
    ggml_free(ctx);
}

// A small transformer: token embeddings on the CPU, layers 0-1 on GPU0, 2-3 on GPU1, 4-5 on
// the CPU, the output matrix on GPU0; SQR (the activation) is CPU-only and GPU1 lacks
// SOFT_MAX.
static void layers(bool parallel, bool events) {
    gpu0->events = gpu1->events = cpu->events = events;
    struct test_dev * devs[] = { gpu0, gpu1, cpu };
    ggml_backend_sched_t sched = sched_new(devs, 3, parallel, true);
    enum { N_LAYER = 6, N_EMBD = 8, N_FF = 16, N_VOCAB = 10, N_TOK = 4 };
    struct ggml_context * wctx[3] = { ctx_new(), ctx_new(), ctx_new() }; // GPU0, GPU1, CPU
    char name[64];
#define W(ctx_i, nm, ...) named(ggml_new_tensor(wctx[ctx_i], GGML_TYPE_F32, __VA_ARGS__), nm)
    int64_t ne_embd[2] = { N_EMBD, N_VOCAB };
    struct ggml_tensor * tok_embd = W(2, "tok_embd", 2, ne_embd);
    int64_t ne_out[2] = { N_EMBD, N_VOCAB };
    struct ggml_tensor * output = W(0, "output", 2, ne_out);
    int64_t ne_norm[1] = { N_EMBD };
    struct ggml_tensor * out_norm = W(0, "output_norm", 1, ne_norm);
    struct ggml_tensor * wq[N_LAYER], * wk[N_LAYER], * wv[N_LAYER], * wo[N_LAYER], * w1[N_LAYER], * w2[N_LAYER], * nrm[N_LAYER];
    for (int l = 0; l < N_LAYER; l++) {
        int c = l < 2 ? 0 : l < 4 ? 1 : 2;
        int64_t sq[2] = { N_EMBD, N_EMBD }, up[2] = { N_EMBD, N_FF }, down[2] = { N_FF, N_EMBD }, v1[1] = { N_EMBD };
        snprintf(name, sizeof(name), "blk.%d.wq", l);
        wq[l] = W(c, name, 2, sq);
        snprintf(name, sizeof(name), "blk.%d.wk", l);
        wk[l] = W(c, name, 2, sq);
        snprintf(name, sizeof(name), "blk.%d.wv", l);
        wv[l] = W(c, name, 2, sq);
        snprintf(name, sizeof(name), "blk.%d.wo", l);
        wo[l] = W(c, name, 2, sq);
        snprintf(name, sizeof(name), "blk.%d.w1", l);
        w1[l] = W(c, name, 2, up);
        snprintf(name, sizeof(name), "blk.%d.w2", l);
        w2[l] = W(c, name, 2, down);
        snprintf(name, sizeof(name), "blk.%d.norm", l);
        nrm[l] = W(c, name, 1, v1);
    }
#undef W
    ggml_backend_buffer_t bufs[3] = {
        weights_in(wctx[0], &gpu0->buft),
        weights_in(wctx[1], &gpu1->buft),
        weights_in(wctx[2], ggml_backend_cpu_buffer_type()),
    };

    // Each round builds a fresh graph: splitting rewires a graph's sources to the scheduler's
    // copies, which live only until the next split.
    const int n_rounds = parallel ? 3 : 1;
    for (int round = 0; round < n_rounds; round++) {
        if (round > 0) {
            ggml_backend_sched_reset(sched);
            printf("  round %d\n", round);
        }
        struct ggml_context * ctx = ctx_new();
        struct ggml_tensor * tokens = named(ggml_new_tensor_1d(ctx, GGML_TYPE_I32, N_TOK), "tokens");
        ggml_set_input(tokens);
        struct ggml_tensor * mask = input(ctx, "kq_mask", GGML_TYPE_F32, N_TOK, N_TOK);
        struct ggml_tensor * cur = named(ggml_get_rows(ctx, tok_embd, tokens), "inp_embd");
        for (int l = 0; l < N_LAYER; l++) {
#define NM(t, fmt) (snprintf(name, sizeof(name), fmt "-%d", l), named((t), name))
            struct ggml_tensor * x = NM(ggml_rms_norm(ctx, cur, 1e-5f), "norm");
            x = NM(ggml_mul(ctx, x, nrm[l]), "attn_norm");
            struct ggml_tensor * q = NM(ggml_mul_mat(ctx, wq[l], x), "Qcur");
            struct ggml_tensor * k = NM(ggml_mul_mat(ctx, wk[l], x), "Kcur");
            struct ggml_tensor * v = NM(ggml_mul_mat(ctx, wv[l], x), "Vcur");
            struct ggml_tensor * kq = NM(ggml_mul_mat(ctx, k, q), "kq");
            kq = NM(ggml_soft_max_ext(ctx, kq, mask, 0.35f, 0.0f), "kq_soft_max");
            struct ggml_tensor * vt = NM(ggml_cont(ctx, ggml_transpose(ctx, v)), "vt");
            struct ggml_tensor * kqv = NM(ggml_mul_mat(ctx, vt, kq), "kqv");
            struct ggml_tensor * o = NM(ggml_mul_mat(ctx, wo[l], kqv), "attn_out");
            cur = NM(ggml_add(ctx, cur, o), "ffn_inp");
            struct ggml_tensor * f = NM(ggml_mul_mat(ctx, w1[l], cur), "ffn_up");
            f = NM(ggml_sqr(ctx, f), "ffn_act");
            f = NM(ggml_mul_mat(ctx, w2[l], f), "ffn_down");
            cur = NM(ggml_add(ctx, cur, f), "l_out");
#undef NM
        }
        cur = named(ggml_rms_norm(ctx, cur, 1e-5f), "norm_out");
        cur = named(ggml_mul(ctx, cur, out_norm), "result_norm");
        cur = named(ggml_mul_mat(ctx, output, cur), "result_output");
        ggml_set_output(cur);
        struct ggml_cgraph * g = ggml_new_graph(ctx);
        ggml_build_forward_expand(g, cur);
        struct ggml_tensor * leafs[] = { tokens, mask, tok_embd, output };
        run(sched, g, leafs, 4);
        ggml_free(ctx);
    }
    ggml_backend_sched_free(sched);
    gpu0->events = gpu1->events = cpu->events = false;
    for (int i = 0; i < 3; i++) {
        ggml_backend_buffer_free(bufs[i]);
        ggml_free(wctx[i]);
    }
}

static void scenario_layers(void) { layers(false, false); }
static void scenario_layers_parallel(void) { layers(true, false); }
static void scenario_layers_events(void) { layers(true, true); }

// More split inputs than ggml's GGML_SCHED_MAX_SPLIT_INPUTS (30) in one split.
static void scenario_many_inputs(void) {
    struct test_dev * devs[] = { gpu0, cpu };
    ggml_backend_sched_t sched = sched_new(devs, 2, false, true);
    struct ggml_context * ctx = ctx_new();
    struct ggml_context * wctx = ctx_new();
    struct ggml_tensor * w = named(ggml_new_tensor_2d(wctx, GGML_TYPE_F32, 2, 2), "w");
    ggml_backend_buffer_t wbuf = weights_in(wctx, &gpu0->buft);
    struct ggml_tensor * x = input(ctx, "x", GGML_TYPE_F32, 2, 1);
    struct ggml_tensor * acc = named(ggml_mul_mat(ctx, w, x), "acc");
    char name[64];
    for (int i = 0; i < 45; i++) {
        snprintf(name, sizeof(name), "in%d", i);
        struct ggml_tensor * e = input(ctx, name, GGML_TYPE_F32, 2, 1);
        snprintf(name, sizeof(name), "acc%d", i);
        acc = named(ggml_add(ctx, acc, e), name);
    }
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, acc);
    run(sched, g, NULL, 0);
    ggml_backend_sched_free(sched);
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
    ggml_free(ctx);
}

// Views of accelerator results read on the CPU, and a node pinned to the CPU mid-chain.
static void scenario_views_pinned(void) {
    struct test_dev * devs[] = { gpu0, cpu };
    ggml_backend_sched_t sched = sched_new(devs, 2, false, true);
    struct ggml_context * ctx = ctx_new();
    struct ggml_context * wctx = ctx_new();
    struct ggml_tensor * w = named(ggml_new_tensor_2d(wctx, GGML_TYPE_F32, 8, 8), "w");
    ggml_backend_buffer_t wbuf = weights_in(wctx, &gpu0->buft);
    struct ggml_tensor * x = input(ctx, "x", GGML_TYPE_F32, 8, 2);
    struct ggml_tensor * h = named(ggml_mul_mat(ctx, w, x), "h");
    struct ggml_tensor * r = named(ggml_reshape_2d(ctx, h, 4, 4), "r");
    struct ggml_tensor * p = named(ggml_permute(ctx, r, 1, 0, 2, 3), "p");
    struct ggml_tensor * c = named(ggml_cont(ctx, p), "c");
    struct ggml_tensor * s = named(ggml_scale(ctx, c, 2.0f), "s");
    struct ggml_tensor * v = named(ggml_view_1d(ctx, s, 8, 0), "v");
    struct ggml_tensor * q = named(ggml_sqr(ctx, v), "q");
    struct ggml_tensor * a = named(ggml_add(ctx, q, q), "a");
    struct ggml_tensor * m = named(ggml_mul(ctx, a, v), "m");
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, m);
    ggml_backend_sched_set_tensor_backend(sched, s, &cpu->backend);
    struct ggml_tensor * leafs[] = { w, x };
    run(sched, g, leafs, 2);
    ggml_backend_sched_free(sched);
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
    ggml_free(ctx);
}

static bool observe(struct ggml_tensor * t, bool ask, void * user_data) {
    (void) user_data;
    if (ask) {
        return strcmp(t->name, "h2") == 0 || strcmp(t->name, "z") == 0;
    }
    printf("  observed %s\n", t->name);
    return true;
}

// The chain again, with an eval callback that wants to see h2 and z.
static void scenario_callback(void) {
    struct test_dev * devs[] = { gpu0, cpu };
    ggml_backend_sched_t sched = sched_new(devs, 2, false, true);
    ggml_backend_sched_set_eval_callback(sched, observe, NULL);
    struct ggml_context * ctx = ctx_new();
    struct ggml_context * wctx = ctx_new();
    struct ggml_tensor * w = named(ggml_new_tensor_2d(wctx, GGML_TYPE_F32, 4, 3), "w");
    ggml_backend_buffer_t wbuf = weights_in(wctx, &gpu0->buft);
    struct ggml_tensor * x = input(ctx, "x", GGML_TYPE_F32, 4, 2);
    struct ggml_tensor * h = named(ggml_mul_mat(ctx, w, x), "h");
    struct ggml_tensor * h1 = named(ggml_scale(ctx, h, 3.0f), "h1");
    struct ggml_tensor * h2 = named(ggml_add(ctx, h1, h), "h2");
    struct ggml_tensor * h3 = named(ggml_scale(ctx, h2, 3.0f), "h3");
    struct ggml_tensor * y = named(ggml_sqr(ctx, h3), "y");
    struct ggml_tensor * z = named(ggml_mul(ctx, y, h2), "z");
    struct ggml_tensor * z2 = named(ggml_scale(ctx, z, 0.5f), "z2");
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, z2);
    struct ggml_tensor * leafs[] = { w, x };
    run(sched, g, leafs, 2);
    ggml_backend_sched_free(sched);
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
    ggml_free(ctx);
}

// reserve then reserve_size on a graph, buffer sizes after each.
static void scenario_reserve(void) {
    struct test_dev * devs[] = { gpu0, cpu };
    ggml_backend_sched_t sched = sched_new(devs, 2, false, true);
    struct ggml_context * ctx = ctx_new();
    struct ggml_context * wctx = ctx_new();
    struct ggml_tensor * w = named(ggml_new_tensor_2d(wctx, GGML_TYPE_F32, 64, 64), "w");
    ggml_backend_buffer_t wbuf = weights_in(wctx, &gpu0->buft);
    struct ggml_tensor * x = input(ctx, "x", GGML_TYPE_F32, 64, 16);
    struct ggml_tensor * h = named(ggml_mul_mat(ctx, w, x), "h");
    struct ggml_tensor * y = named(ggml_sqr(ctx, h), "y");
    struct ggml_tensor * z = named(ggml_mul_mat(ctx, w, y), "z");
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, z);
    printf("  reserve=%d\n", ggml_backend_sched_reserve(sched, g));
    dump(sched, g);
    dump_sizes(sched);
    size_t sizes[2] = { 0, 0 };
    ggml_backend_sched_reserve_size(sched, g, sizes);
    printf("  reserve_size: %zu %zu\n", sizes[0], sizes[1]);
    ggml_backend_sched_free(sched);
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
    ggml_free(ctx);
}

struct scenario {
    const char * name;
    void (*fn)(void);
};

static const struct scenario scenarios[] = {
    { "chain", scenario_chain },
    { "offload-on", scenario_offload_on },
    { "offload-off", scenario_offload_off },
    { "upgrade", scenario_upgrade },
    { "layers", scenario_layers },
    { "layers-parallel", scenario_layers_parallel },
    { "layers-events", scenario_layers_events },
    { "many-inputs", scenario_many_inputs },
    { "views-pinned", scenario_views_pinned },
    { "callback", scenario_callback },
    { "reserve", scenario_reserve },
};

int main(int argc, char ** argv) {
    make_devices();
    const int n = (int) (sizeof(scenarios) / sizeof(scenarios[0]));
    for (int i = 0; i < n; i++) {
        bool selected = argc < 2;
        for (int a = 1; a < argc; a++) {
            selected = selected || strcmp(argv[a], scenarios[i].name) == 0;
        }
        if (!selected) {
            continue;
        }
        printf("== %s\n", scenarios[i].name);
        fflush(stdout);
        scenarios[i].fn();
        fflush(stdout);
    }
    return 0;
}
