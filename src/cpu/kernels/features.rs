//! What this processor can do, asked once and cached: kernels pick their SIMD path from here
//! at run time, so a default build is fast without `-C target-cpu=native`.
//!
//! The AVX-512 matrix tiles ([`has_avx512`]) can be turned off for a process by setting the
//! environment variable `GGML_RS_NO_AVX512` to anything but empty or `0` (read once, at the
//! first check), to compare them with the AVX2 tiles on the same machine.

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
    pub avx512vl: bool,
    pub avx512dq: bool,
    pub avx512vbmi: bool,
    pub avx512vnni: bool,
    pub avx512bf16: bool,
    pub avx_vnni: bool,
    /// The vendor is Intel ("GenuineIntel"): some tunings differ by core design, not by
    /// feature (how far the float products prefetch, whether BF16 panels keep pairs, from
    /// how many columns repacked floats take panels; each says what was measured).
    pub intel: bool,
}

impl Features {
    /// The x86-64 path the hot kernels use: AVX2 with FMA and F16C.
    pub fn has_avx2_fma(&self) -> bool {
        self.avx2 && self.fma && self.f16c
    }

    /// How this processor runs `vpdpbusd` on 256-bit vectors, if it does.
    pub fn vnni(&self) -> Vnni {
        if !self.has_avx2_fma() {
            Vnni::None
        } else if self.avx_vnni {
            Vnni::Vex
        } else if self.avx512vnni && self.avx512vl {
            Vnni::Evex
        } else {
            Vnni::None
        }
    }

    /// The AVX-512 subsets the matrix tiles use (`dot_avx512`): F, BW, VL, DQ and VNNI, on
    /// top of the AVX2 path, and BMI2, which every AVX-512 processor has and the IQ2_S tile
    /// builds its grid indices with. (BF16 is checked on its own.)
    pub fn has_avx512(&self) -> bool {
        self.has_avx2_fma()
            && self.avx512f
            && self.avx512bw
            && self.avx512vl
            && self.avx512dq
            && self.avx512vnni
            && self.bmi2
    }
}

/// The encoding under which the processor has the 256-bit byte dot product `vpdpbusd`:
/// AVX-VNNI (VEX: Alder Lake, Sapphire Rapids and later Intel, Zen 5) or AVX512-VNNI with
/// AVX512VL (EVEX: Ice Lake, Zen 4). The kernels expand their VNNI tiles once per encoding,
/// each under its own target features.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vnni {
    None,
    Vex,
    Evex,
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
        avx512vl: is_x86_feature_detected!("avx512vl"),
        avx512dq: is_x86_feature_detected!("avx512dq"),
        avx512vbmi: is_x86_feature_detected!("avx512vbmi"),
        avx512vnni: is_x86_feature_detected!("avx512vnni"),
        avx512bf16: is_x86_feature_detected!("avx512bf16"),
        avx_vnni: is_x86_feature_detected!("avxvnni"),
        intel: {
            let id = std::arch::x86_64::__cpuid(0);
            [id.ebx, id.edx, id.ecx]
                == [u32::from_le_bytes(*b"Genu"), u32::from_le_bytes(*b"ineI"), u32::from_le_bytes(*b"ntel")]
        },
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

/// Whether `GGML_RS_NO_AVX512` asks for the AVX-512 tiles to stay off.
fn avx512_vetoed(value: Option<&str>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "0")
}

/// Whether the AVX-512 matrix tiles may run: the processor has them
/// ([`Features::has_avx512`]) and `GGML_RS_NO_AVX512` does not veto them.
pub fn has_avx512() -> bool {
    static ALLOWED: OnceLock<bool> = OnceLock::new();
    *ALLOWED
        .get_or_init(|| features().has_avx512() && !avx512_vetoed(std::env::var("GGML_RS_NO_AVX512").ok().as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_is_stable() {
        assert_eq!(features(), features());
        assert_eq!(has_avx512(), has_avx512());
        assert!(!has_avx512() || features().has_avx2_fma());
    }

    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[test]
    fn the_vendor_is_the_one_linux_reports() {
        let info = std::fs::read_to_string("/proc/cpuinfo").expect("/proc/cpuinfo");
        let vendor = info.lines().find(|l| l.starts_with("vendor_id")).expect("a vendor_id line");
        assert_eq!(features().intel, vendor.trim_end().ends_with("GenuineIntel"), "{vendor}");
    }

    #[test]
    fn the_veto_takes_any_value_but_empty_and_zero() {
        assert!(!avx512_vetoed(None));
        assert!(!avx512_vetoed(Some("")));
        assert!(!avx512_vetoed(Some("0")));
        assert!(avx512_vetoed(Some("1")));
        assert!(avx512_vetoed(Some("yes")));
    }
}
