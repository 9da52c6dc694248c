//! Compiles the C-variadic bodies (see src/ffi/variadic.rs), gives the shared library the
//! soname it is installed under, and with the `cuda-emulator` feature compiles the CUDA
//! kernel sources as host C++ for the emulated device (see src/cuda/emulator/).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=src/ffi/variadic.c");
    println!("cargo:rerun-if-changed=include/ggml.h");
    cc::Build::new().file("src/ffi/variadic.c").warnings_into_errors(true).compile("ggml_variadic");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libggml-rs.so.0");
    kernel_sources();
    if std::env::var_os("CARGO_FEATURE_CUDA_EMULATOR").is_some() {
        emulated_kernels();
    }
}

/// The kernel sources in src/cuda/kernels, sorted.
fn cuda_sources() -> Vec<PathBuf> {
    let mut sources: Vec<PathBuf> = std::fs::read_dir("src/cuda/kernels")
        .expect("src/cuda/kernels")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .collect();
    sources.sort();
    sources
}

/// The kernel sources embedded for NVRTC (OUT_DIR/cuda_sources.rs): each file's stem and text.
fn kernel_sources() {
    println!("cargo:rerun-if-changed=src/cuda/kernels");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut table = String::new();
    for source in cuda_sources() {
        let stem = source.file_stem().and_then(|s| s.to_str()).expect("a UTF-8 file name");
        let abs = std::fs::canonicalize(&source).expect("a kernel source path");
        writeln!(table, "    (\"{stem}\", include_str!(\"{}\")),", abs.display()).unwrap();
    }
    let rust = format!(
        "/// Every kernel source of src/cuda/kernels: the file's stem and its text.\n\
         pub static SOURCES: &[(&str, &str)] = &[\n{table}];\n"
    );
    std::fs::write(out.join("cuda_sources.rs"), rust).expect("writing the kernel source table");
}

/// The most threads a block of a kernel without `__launch_bounds__` may have: 65536 registers
/// per block hold 256 threads of the 255 registers ptxas may give a thread, so any such
/// kernel launches; beyond that, only a declared bound keeps ptxas within the register file.
const UNBOUNDED_THREADS: u32 = 256;

/// The kernels a CUDA source defines, `extern "C" __global__ void NAME(` or
/// `extern "C" __global__ void __launch_bounds__(N) NAME(`: each name with the most threads a
/// block of it may have.
fn kernels_of(source: &str) -> Vec<(String, u32)> {
    const MARK: &str = "extern \"C\" __global__ void ";
    const BOUNDS: &str = "__launch_bounds__(";
    source
        .match_indices(MARK)
        .map(|(at, _)| {
            let rest = &source[at + MARK.len()..];
            let (threads, rest) = match rest.strip_prefix(BOUNDS) {
                Some(bounded) => {
                    let (n, rest) = bounded.split_once(") ").expect("__launch_bounds__(N) NAME(");
                    (n.parse().expect("__launch_bounds__ takes a number of threads"), rest)
                }
                None => (UNBOUNDED_THREADS, rest),
            };
            (rest.split(['(', ' ']).next().expect("a kernel name").to_string(), threads)
        })
        .collect()
}

/// Each kernel source compiled as C++ with the emulator's built-ins, a trampoline per kernel
/// taking CUDA's argument array, and a Rust table of them by name (OUT_DIR/emulated_kernels.rs).
fn emulated_kernels() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let kernels = Path::new("src/cuda/kernels");
    let emulator = Path::new("src/cuda/emulator");
    println!("cargo:rerun-if-changed={}", kernels.display());
    println!("cargo:rerun-if-changed={}", emulator.display());

    println!("cargo:rerun-if-env-changed=GGML_RS_EMU_TSAN");
    let sources = cuda_sources();

    let base = |build: &mut cc::Build| {
        build
            .cpp(true)
            .std("c++20")
            .opt_level(2)
            .include(emulator)
            .include(kernels)
            .flag("-pthread")
            // CUDA's `#pragma unroll` means nothing to g++
            .flag("-Wno-unknown-pragmas")
            .warnings_into_errors(true);
    };
    // The emulator's own code: scheduler, fibers, host threads.
    let mut runtime = cc::Build::new();
    base(&mut runtime);
    runtime.files(["block.cpp", "context.cpp", "launch.cpp"].map(|f| emulator.join(f)));
    let mut build = cc::Build::new();
    base(&mut build);
    // GGML_RS_EMU_TSAN=1 (scripts/cuda-emulator-tsan): the kernels under ThreadSanitizer, the
    // emulator annotated for it but not instrumented (see src/cuda/emulator/tsan.hpp).
    let tsan = std::env::var_os("GGML_RS_EMU_TSAN").is_some_and(|v| v == "1");
    if tsan {
        build.flag("-fsanitize=thread");
        runtime.define("GGML_RS_EMU_TSAN", None);
    }
    let (mut externs, mut table) = (String::new(), String::new());
    for source in &sources {
        let text = std::fs::read_to_string(source).expect("a kernel source");
        let stem = source.file_stem().and_then(|s| s.to_str()).expect("a UTF-8 file name");
        let abs = std::fs::canonicalize(source).expect("a kernel source path");
        let mut unit = format!("#include \"cuda.hpp\"\n#include \"{}\"\n", abs.display());
        for (name, max_threads) in kernels_of(&text) {
            writeln!(unit, "extern \"C\" void ggml_rs_emu_{name}(void ** args) {{ emu::invoke({name}, args); }}")
                .unwrap();
            writeln!(externs, "    fn ggml_rs_emu_{name}(args: *mut *mut c_void);").unwrap();
            writeln!(
                table,
                "    EmulatedKernel {{ name: \"{name}\", run: ggml_rs_emu_{name}, max_threads: {max_threads} }},"
            )
            .unwrap();
        }
        let path = out.join(format!("emulated_{stem}.cpp"));
        std::fs::write(&path, unit).expect("writing a kernel unit");
        build.file(path);
    }
    build.compile("ggml_cuda_emulator");
    // after the kernels, which call it, for linkers that take archives in one pass
    runtime.compile("ggml_cuda_emulator_runtime");
    if tsan {
        println!("cargo:rustc-link-lib=dylib=tsan");
    }

    let rust = format!(
        "unsafe extern \"C\" {{\n{externs}}}\n\n/// Every kernel of src/cuda/kernels by name, as the emulator runs it.\n\
         pub(super) static KERNELS: &[EmulatedKernel] = &[\n{table}];\n"
    );
    std::fs::write(out.join("emulated_kernels.rs"), rust).expect("writing the kernel table");
}
