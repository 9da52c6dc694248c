//! Start-up (`ggml_cpu_init`) and the settings read from the environment then.

use crate::cpu::features;
use std::sync::OnceLock;

/// Settings read once at start-up.
#[derive(Clone, Copy, Debug)]
struct Settings {
    /// `GGML_CPU_DISABLE_FUSION=1`: compute every node on its own.
    fusion_disabled: bool,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// `ggml_cpu_init`: detects the processor's features and reads the environment, once per
/// process; later calls return at once.
pub fn cpu_init() {
    settings();
    crate::cpu::tables::fill();
}

fn settings() -> &'static Settings {
    SETTINGS.get_or_init(|| {
        crate::core::time::init();
        features::features();
        let fusion_disabled = std::env::var("GGML_CPU_DISABLE_FUSION").is_ok_and(|v| v.trim().parse() == Ok(1));
        Settings { fusion_disabled }
    })
}

/// Whether kernels may compute several nodes as one (not when `GGML_CPU_DISABLE_FUSION=1`).
pub fn fusion_enabled() -> bool {
    !settings().fusion_disabled
}
