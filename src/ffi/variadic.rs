//! Exported C-variadic functions. Their bodies are in `variadic.c` (stable Rust cannot read
//! `...` arguments); each exported symbol here is a naked function that jumps straight to the
//! C body. A jump leaves every argument register, the vector-count register and the stack as
//! the caller set them, so the C function sees the call exactly as it was made.

macro_rules! forward_variadic {
    ($($name:ident => $target:ident),* $(,)?) => {$(
        unsafe extern "C" {
            fn $target();
        }

        /// # Safety
        /// Called from C with the arguments of the C declaration; see the module docs.
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() {
            #[cfg(target_arch = "x86_64")]
            core::arch::naked_asm!("jmp {}", sym $target);
            #[cfg(target_arch = "aarch64")]
            core::arch::naked_asm!("b {}", sym $target);
        }
    )*};
}

forward_variadic! {
    ggml_abort => ggml_rs_abort_c,
    ggml_format_name => ggml_rs_format_name_c,
    ggml_log_internal => ggml_rs_log_internal_c,
}
