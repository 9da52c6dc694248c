//! Compiles the C-variadic bodies (see src/ffi/variadic.rs) and gives the shared library the
//! soname it is installed under.

fn main() {
    println!("cargo:rerun-if-changed=src/ffi/variadic.c");
    println!("cargo:rerun-if-changed=include/ggml.h");
    cc::Build::new().file("src/ffi/variadic.c").warnings_into_errors(true).compile("ggml_variadic");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libggml-rs.so.0");
}
