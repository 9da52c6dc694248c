// The backend registry through the public C API: the built-in CPU registry and device (its
// properties, buffer types and the NULL it returns for a backend while CPU compute is not
// available), lookups by index, name and type, and plugin loading. For the plugins the test
// writes a tiny backend in C to a temporary directory and builds it with the system C
// compiler (skipped, with a note, when none is found): loading, scores, API versions,
// variant selection by load_all_from_path, GGML_BACKEND_PATH, and unloading.
#include "ggml.h"
#include "ggml-backend.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

// ---- log capture ----

static char log_text[8192];
static int  log_errors = 0;

static void capture_log(enum ggml_log_level level, const char * text, void * user_data) {
    (void) user_data;
    if (level == GGML_LOG_LEVEL_ERROR) {
        log_errors++;
    }
    size_t used = strlen(log_text);
    snprintf(log_text + used, sizeof(log_text) - used, "%s", text);
}

static void log_reset(void) {
    log_text[0] = '\0';
    log_errors  = 0;
}

// ---- the CPU registry and device ----

static ggml_backend_reg_t find_reg(const char * name) {
    for (size_t i = 0; i < ggml_backend_reg_count(); i++) {
        ggml_backend_reg_t reg = ggml_backend_reg_get(i);
        if (strcmp(ggml_backend_reg_name(reg), name) == 0) {
            return reg;
        }
    }
    return NULL;
}

static void test_cpu_registry(void) {
    CHECK(ggml_backend_reg_count() >= 1);
    ggml_backend_reg_t cpu = find_reg("CPU");
    CHECK(cpu != NULL);
    if (cpu == NULL) {
        return;
    }
    CHECK(ggml_backend_reg_by_name("CPU") == cpu);
    CHECK(ggml_backend_reg_by_name("cpu") == cpu);
    CHECK(ggml_backend_reg_by_name("CpU") == cpu);
    CHECK(ggml_backend_reg_by_name("CPUX") == NULL);
    CHECK(ggml_backend_reg_by_name("") == NULL);
    CHECK(ggml_backend_reg_dev_count(cpu) == 1);

    // extra functions: a NULL-terminated list of extra CPU buffer types; unknown names give NULL
    typedef ggml_backend_buffer_type_t * (*extra_bufts_t)(ggml_backend_dev_t);
    void * fn = ggml_backend_reg_get_proc_address(cpu, "ggml_backend_dev_get_extra_bufts");
    CHECK(fn != NULL);
    if (fn != NULL) {
        extra_bufts_t extra = (extra_bufts_t) fn;
        ggml_backend_buffer_type_t * list = extra(ggml_backend_reg_dev_get(cpu, 0));
        CHECK(list != NULL);
        for (size_t i = 0; list != NULL && list[i] != NULL && i < 16; i++) {
            CHECK(ggml_backend_buft_name(list[i]) != NULL);
        }
    }
    CHECK(ggml_backend_reg_get_proc_address(cpu, "ggml_backend_no_such_function") == NULL);
}

static void test_cpu_device(void) {
    CHECK(ggml_backend_dev_count() >= 1);
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    CHECK(dev != NULL);
    if (dev == NULL) {
        return;
    }
    ggml_backend_reg_t cpu = ggml_backend_reg_by_name("CPU");
    CHECK(ggml_backend_reg_dev_get(cpu, 0) == dev);
    CHECK(ggml_backend_dev_backend_reg(dev) == cpu);
    CHECK(ggml_backend_dev_by_name("CPU") == dev);
    CHECK(ggml_backend_dev_by_name("cpu") == dev);
    CHECK(ggml_backend_dev_by_name("no-such-device") == NULL);
    CHECK(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_GPU) == NULL);

    int listed = 0;
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        listed += ggml_backend_dev_get(i) == dev;
    }
    CHECK(listed == 1);

    CHECK(strcmp(ggml_backend_dev_name(dev), "CPU") == 0);
    const char * desc = ggml_backend_dev_description(dev);
    CHECK(desc != NULL && desc[0] != '\0');
    CHECK(ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU);

    size_t free_mem = 0, total_mem = 0;
    ggml_backend_dev_memory(dev, &free_mem, &total_mem);
    CHECK(total_mem > 0);
    CHECK(free_mem == total_mem);

    struct ggml_backend_dev_props props;
    memset(&props, 0xAB, sizeof(props));
    ggml_backend_dev_get_props(dev, &props);
    CHECK(strcmp(props.name, "CPU") == 0);
    CHECK(strcmp(props.description, desc) == 0);
    CHECK(props.type == GGML_BACKEND_DEVICE_TYPE_CPU);
    CHECK(props.memory_total == total_mem);
    CHECK(props.memory_free == total_mem);
    CHECK(props.device_id == NULL);
    CHECK(!props.caps.async);
    CHECK(!props.caps.host_buffer);
    CHECK(props.caps.buffer_from_host_ptr);
    CHECK(!props.caps.events);
    CHECK(props.caps.mmap_support);

    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(dev);
    CHECK(buft == ggml_backend_cpu_buffer_type());
    CHECK(ggml_backend_dev_host_buffer_type(dev) == NULL);
    CHECK(ggml_backend_dev_supports_buft(dev, buft));
    CHECK(ggml_backend_event_new(dev) == NULL);
    CHECK(ggml_backend_event_new(NULL) == NULL);
    ggml_backend_event_free(NULL);

    void * mem = aligned_alloc(64, 1024);
    ggml_backend_buffer_t buf = ggml_backend_dev_buffer_from_host_ptr(dev, mem, 1024, 1024);
    CHECK(buf != NULL);
    CHECK(ggml_backend_buffer_get_base(buf) == mem);
    CHECK(ggml_backend_buffer_get_size(buf) == 1024);
    CHECK(ggml_backend_buffer_is_host(buf));
    CHECK(strcmp(ggml_backend_buffer_name(buf), "CPU_Mapped") == 0);
    CHECK(ggml_backend_dev_supports_buft(dev, ggml_backend_buffer_get_type(buf)));
    ggml_backend_buffer_free(buf);
    free(mem);

    // op coverage: metadata ops always, an F32 add, a matmul with an F32 src1
    struct ggml_init_params params = { 16 * 1024, NULL, true };
    struct ggml_context * ctx = ggml_init(params);
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 4);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 4);
    CHECK(ggml_backend_dev_supports_op(dev, ggml_add(ctx, a, b)));
    CHECK(ggml_backend_dev_supports_op(dev, ggml_mul_mat(ctx, a, b)));
    CHECK(ggml_backend_dev_supports_op(dev, ggml_transpose(ctx, a)));
    struct ggml_tensor * q = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, 32, 4);
    struct ggml_tensor * h = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 32, 4);
    CHECK(!ggml_backend_dev_supports_op(dev, ggml_mul_mat(ctx, q, h)));
    CHECK(!ggml_backend_dev_offload_op(dev, ggml_add(ctx, a, b)));
    ggml_free(ctx);
}

// The CPU device starts CPU backends by every route: the device, its type, its name, and as
// the best (only) device.
static void test_cpu_backend_starts(void) {
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);

    log_reset();
    ggml_backend_t backends[4] = {
        ggml_backend_dev_init(dev, NULL),
        ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL),
        ggml_backend_init_by_name("CPU", NULL),
        ggml_backend_init_best(),
    };
    for (int i = 0; i < 4; i++) {
        CHECK(backends[i] != NULL);
        CHECK(backends[i] != NULL && ggml_backend_get_device(backends[i]) == dev);
        CHECK(backends[i] != NULL && strcmp(ggml_backend_name(backends[i]), "CPU") == 0);
        ggml_backend_free(backends[i]);
    }
    CHECK(log_errors == 0);

    // no device at all: NULL without a word
    log_reset();
    CHECK(ggml_backend_init_by_name("no-such-device", NULL) == NULL);
    CHECK(ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_GPU, NULL) == NULL);
    CHECK(log_errors == 0);

    // the NULL-tolerant backend functions
    CHECK(strcmp(ggml_backend_name(NULL), "NULL") == 0);
    CHECK(ggml_backend_guid(NULL) == NULL);
    ggml_backend_free(NULL);
}

// ---- plugins ----

static const char * plugin_source =
    "#include <stddef.h>\n"
    "#include <string.h>\n"
    "typedef struct reg reg;\n"
    "typedef struct dev dev;\n"
    "struct reg_i { const char * (*get_name)(reg *); size_t (*get_device_count)(reg *);\n"
    "               dev * (*get_device)(reg *, size_t); void * (*get_proc_address)(reg *, const char *); };\n"
    "struct reg { int api_version; struct reg_i iface; void * context; };\n"
    "struct dev_i { const char * (*get_name)(dev *); const char * (*get_description)(dev *);\n"
    "               void * rest[13]; };\n"
    "struct dev { struct dev_i iface; reg * reg; void * context; };\n"
    "static const char * reg_name(reg * r) { (void) r; return PLUGIN_NAME; }\n"
    "static size_t reg_count(reg * r) { (void) r; return 1; }\n"
    "static dev the_dev;\n"
    "static dev * reg_dev(reg * r, size_t i) { (void) r; return i == 0 ? &the_dev : NULL; }\n"
    "static void * reg_proc(reg * r, const char * name) {\n"
    "    (void) r; return strcmp(name, \"plugin_score\") == 0 ? (void *) (size_t) SCORE : NULL; }\n"
    "static const char * dev_name(dev * d) { (void) d; return PLUGIN_NAME \"_dev\"; }\n"
    "static int dev_type(dev * d) { (void) d; return 3; /* ACCEL */ }\n"
    "static reg the_reg = { API_VERSION, { reg_name, reg_count, reg_dev, reg_proc }, NULL };\n"
    "__attribute__((visibility(\"default\"))) reg * ggml_backend_init(void) {\n"
    "    the_dev.iface.get_name = dev_name;\n"
    "    the_dev.iface.get_description = dev_name;\n"
    "    the_dev.iface.rest[1] = (void *) dev_type; /* get_type follows get_memory */\n"
    "    the_dev.reg = &the_reg;\n"
    "    return &the_reg; }\n"
    "#ifndef NO_SCORE\n"
    "__attribute__((visibility(\"default\"))) int ggml_backend_score(void) { return SCORE; }\n"
    "#endif\n";

static char plugin_dir[256];

// Builds PLUGIN_DIR/<file> from the plugin source with the given macros; false on failure.
static bool build_plugin(const char * file, const char * name, int score, int api_version, bool with_score) {
    char src[512], cmd[2048];
    snprintf(src, sizeof(src), "%s/plugin.c", plugin_dir);
    FILE * f = fopen(src, "w");
    if (!f) {
        return false;
    }
    fputs(plugin_source, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd),
             "cc -shared -fPIC -o '%s/%s' '%s' -DPLUGIN_NAME='\"%s\"' -DSCORE=%d -DAPI_VERSION=%d %s",
             plugin_dir, file, src, name, score, api_version, with_score ? "" : "-DNO_SCORE");
    return system(cmd) == 0;
}

static void test_load_missing(void) {
    size_t n_regs = ggml_backend_reg_count();
    log_reset();
    CHECK(ggml_backend_load("/nonexistent/libggml-nothing.so") == NULL);
    CHECK(log_errors == 1);
    CHECK(strstr(log_text, "/nonexistent/libggml-nothing.so") != NULL);
    CHECK(ggml_backend_reg_count() == n_regs);

    // an empty directory holds no plugin: nothing changes
    ggml_backend_load_all_from_path(plugin_dir);
    CHECK(ggml_backend_reg_count() == n_regs);
}

static void test_plugins(void) {
    if (system("cc --version > /dev/null 2>&1") != 0) {
        fprintf(stderr, "note: no C compiler found, plugin loading is not tested\n");
        return;
    }
    char path[512];
    size_t n_regs = ggml_backend_reg_count();
    size_t n_devs = ggml_backend_dev_count();

    // a plain plugin: registered with its device, found by name, then unloaded
    CHECK(build_plugin("libggml-alpha.so", "ALPHA", 7, 2, true));
    snprintf(path, sizeof(path), "%s/libggml-alpha.so", plugin_dir);
    log_reset();
    ggml_backend_reg_t alpha = ggml_backend_load(path);
    CHECK(alpha != NULL);
    CHECK(strstr(log_text, "loaded ALPHA backend") != NULL);
    CHECK(ggml_backend_reg_count() == n_regs + 1);
    CHECK(ggml_backend_dev_count() == n_devs + 1);
    CHECK(ggml_backend_reg_by_name("alpha") == alpha);
    ggml_backend_dev_t adev = ggml_backend_dev_by_name("ALPHA_dev");
    CHECK(adev != NULL && ggml_backend_dev_backend_reg(adev) == alpha);
    CHECK(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_ACCEL) == adev);
    CHECK((size_t) ggml_backend_reg_get_proc_address(alpha, "plugin_score") == 7);
    ggml_backend_register(alpha); // already listed: no change
    ggml_backend_device_register(adev);
    CHECK(ggml_backend_reg_count() == n_regs + 1);
    CHECK(ggml_backend_dev_count() == n_devs + 1);
    ggml_backend_unload(alpha);
    CHECK(ggml_backend_reg_count() == n_regs);
    CHECK(ggml_backend_dev_count() == n_devs);
    CHECK(ggml_backend_reg_by_name("alpha") == NULL);
    CHECK(ggml_backend_dev_by_name("ALPHA_dev") == NULL);
    unlink(path);

    // score 0: not supported here; wrong API version; no ggml_backend_init
    CHECK(build_plugin("libggml-zero.so", "ZERO", 0, 2, true));
    snprintf(path, sizeof(path), "%s/libggml-zero.so", plugin_dir);
    log_reset();
    CHECK(ggml_backend_load(path) == NULL);
    CHECK(strstr(log_text, "not supported") != NULL);
    unlink(path);

    CHECK(build_plugin("libggml-old.so", "OLD", 1, 1, true));
    snprintf(path, sizeof(path), "%s/libggml-old.so", plugin_dir);
    log_reset();
    CHECK(ggml_backend_load(path) == NULL);
    CHECK(log_errors == 1 && strstr(log_text, "incompatible API version") != NULL);
    unlink(path);
    CHECK(ggml_backend_reg_count() == n_regs);

    // load_all_from_path picks the best-scoring variant of a known backend name
    CHECK(build_plugin("libggml-rpc-low.so", "RPC_LOW", 3, 2, true));
    CHECK(build_plugin("libggml-rpc-high.so", "RPC_HIGH", 9, 2, true));
    CHECK(build_plugin("libggml-rpc-none.so", "RPC_NONE", 0, 2, true));
    CHECK(build_plugin("libggml-rpc-x.so.1", "RPC_IGNORED", 50, 2, true));
    ggml_backend_load_all_from_path(plugin_dir);
    CHECK(ggml_backend_reg_count() == n_regs + 1);
    ggml_backend_reg_t rpc = ggml_backend_reg_by_name("RPC_HIGH");
    CHECK(rpc != NULL);
    CHECK(ggml_backend_reg_by_name("RPC_LOW") == NULL);
    CHECK(ggml_backend_reg_by_name("RPC_IGNORED") == NULL);
    if (rpc) {
        ggml_backend_unload(rpc);
    }
    CHECK(ggml_backend_reg_count() == n_regs);

    // GGML_BACKEND_PATH names one more library for load_all
    CHECK(build_plugin("custom.so", "CUSTOM", 1, 2, false));
    snprintf(path, sizeof(path), "%s/custom.so", plugin_dir);
    setenv("GGML_BACKEND_PATH", path, 1);
    char empty[300];
    snprintf(empty, sizeof(empty), "%s/empty", plugin_dir);
    CHECK(mkdir(empty, 0700) == 0);
    ggml_backend_load_all_from_path(empty);
    unsetenv("GGML_BACKEND_PATH");
    ggml_backend_reg_t custom = ggml_backend_reg_by_name("CUSTOM");
    CHECK(custom != NULL);
    if (custom) {
        ggml_backend_unload(custom);
    }
    CHECK(ggml_backend_reg_count() == n_regs);
}

int main(void) {
    ggml_log_set(capture_log, NULL);
    unsetenv("GGML_BACKEND_PATH"); // only the test's own plugins

    snprintf(plugin_dir, sizeof(plugin_dir), "/tmp/ggml-registry-test-XXXXXX");
    if (mkdtemp(plugin_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }

    test_cpu_registry();
    test_cpu_device();
    test_cpu_backend_starts();
    test_load_missing();
    test_plugins();

    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", plugin_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "note: could not remove %s\n", plugin_dir);
    }

    ggml_log_set(NULL, NULL);
    if (failures) {
        fprintf(stderr, "test-backend-registry: %d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("test-backend-registry: all %d checks passed\n", checks);
    return 0;
}
