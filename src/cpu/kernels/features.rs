//! What this processor can do, asked once and cached: kernels pick their SIMD path from here
//! at run time, so a default build is fast without `-C target-cpu=native`.

use std::sync::OnceLock;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    pub sse3: bool,
    pub ssse3: bool,
    pub avx: bool,
    pub avx2: bool,
    pub fma: bool,
    pub f16c: bool,
    pub bmi2: bool,
    pub avx512f: bool,
    pub avx512bw: bool,
    pub avx512vbmi: bool,
    pub avx512vnni: bool,
    pub avx512bf16: bool,
    pub avx_vnni: bool,
}

impl Features {
    /// The x86-64 path the hot kernels use: AVX2 with FMA and F16C.
    pub fn has_avx2_fma(&self) -> bool {
        self.avx2 && self.fma && self.f16c
    }
}

#[cfg(target_arch = "x86_64")]
fn detect() -> Features {
    Features {
        sse3: is_x86_feature_detected!("sse3"),
        ssse3: is_x86_feature_detected!("ssse3"),
        avx: is_x86_feature_detected!("avx"),
        avx2: is_x86_feature_detected!("avx2"),
        fma: is_x86_feature_detected!("fma"),
        f16c: is_x86_feature_detected!("f16c"),
        bmi2: is_x86_feature_detected!("bmi2"),
        avx512f: is_x86_feature_detected!("avx512f"),
        avx512bw: is_x86_feature_detected!("avx512bw"),
        avx512vbmi: is_x86_feature_detected!("avx512vbmi"),
        avx512vnni: is_x86_feature_detected!("avx512vnni"),
        avx512bf16: is_x86_feature_detected!("avx512bf16"),
        avx_vnni: is_x86_feature_detected!("avxvnni"),
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> Features {
    Features::default()
}

/// The cached answer for this process.
pub fn features() -> &'static Features {
    static FEATURES: OnceLock<Features> = OnceLock::new();
    FEATURES.get_or_init(detect)
}

#[cfg(test)]
mod tests {
    #[test]
    fn detection_is_stable() {
        assert_eq!(super::features(), super::features());
    }
}
