//! What this processor can do, asked once and cached: kernels pick their SIMD path from here
//! at run time, so a default build is fast without `-C target-cpu=native`.
//!
//! [`features`] answers what this process may *use*, not what the processor reports, so that
//! one switch turns a whole instruction set off everywhere: every kernel, and the
//! `ggml_cpu_has_*` exports, read their answers from it and from its two predicates,
//! [`Features::has_avx2_fma`] (may use the SIMD paths at all) and [`Features::has_avx512`]
//! (may use the AVX-512 paths). Nothing else asks the processor (a test scans the sources).
//!
//! `GGML_RS_NO_AVX512` set to anything but empty or `0` (read once, at the first check) makes
//! every AVX-512 field read false: F, BW, VL, DQ, VBMI, VNNI, BF16 and FP16. So no AVX-512
//! tile, vector width or instruction runs, `ggml_cpu_has_avx512*` answer 0, and VNNI products
//! use the VEX encoding (AVX-VNNI) where the processor has it, otherwise none. It is there to
//! compare the AVX-512 paths with the AVX2 ones on the same machine.

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
    pub avx512fp16: bool,
    pub avx_vnni: bool,
    /// The vendor is Intel ("GenuineIntel"): some tunings differ by core design, not by
    /// feature (how far the float products prefetch, whether BF16 panels keep pairs, from
    /// how many columns repacked floats take panels; each says what was measured).
    pub intel: bool,
}

/// The instruction sets the hot kernels are written for. A kernel family's path holds one
/// only after checking that this processor runs it (`dot::Path`, the repacked product's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
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

    /// The AVX-512 subsets the AVX-512 kernels use: F, BW, VL, DQ and VNNI, on top of the
    /// AVX2 path, and BMI2, which every AVX-512 processor has and the IQ2_S tile builds its
    /// grid indices with. (BF16, VBMI and FP16 are checked on their own.)
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

/// What the processor reports (the only place that asks it).
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
        avx512fp16: is_x86_feature_detected!("avx512fp16"),
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

/// The cached answer for this process: what the processor reports, less what
/// `GGML_RS_NO_AVX512` turns off.
pub fn features() -> &'static Features {
    static FEATURES: OnceLock<Features> = OnceLock::new();
    FEATURES.get_or_init(|| usable(detect(), avx512_vetoed(std::env::var("GGML_RS_NO_AVX512").ok().as_deref())))
}

/// `found` as this process may use it: with `no_avx512`, every AVX-512 field off.
fn usable(found: Features, no_avx512: bool) -> Features {
    if !no_avx512 {
        return found;
    }
    Features {
        avx512f: false,
        avx512bw: false,
        avx512vl: false,
        avx512dq: false,
        avx512vbmi: false,
        avx512vnni: false,
        avx512bf16: false,
        avx512fp16: false,
        ..found
    }
}

/// Whether `GGML_RS_NO_AVX512` asks for the AVX-512 paths to stay off.
fn avx512_vetoed(value: Option<&str>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_is_stable() {
        assert_eq!(features(), features());
        assert!(!features().has_avx512() || features().has_avx2_fma());
    }

    /// Every AVX-512 field of `f`: what the switch must turn off.
    fn avx512_fields(f: &Features) -> [(&'static str, bool); 8] {
        [
            ("avx512f", f.avx512f),
            ("avx512bw", f.avx512bw),
            ("avx512vl", f.avx512vl),
            ("avx512dq", f.avx512dq),
            ("avx512vbmi", f.avx512vbmi),
            ("avx512vnni", f.avx512vnni),
            ("avx512bf16", f.avx512bf16),
            ("avx512fp16", f.avx512fp16),
        ]
    }

    #[test]
    fn the_switch_leaves_no_avx512_field_on() {
        let all = Features {
            avx2: true,
            fma: true,
            f16c: true,
            bmi2: true,
            avx512f: true,
            avx512bw: true,
            avx512vl: true,
            avx512dq: true,
            avx512vbmi: true,
            avx512vnni: true,
            avx512bf16: true,
            avx512fp16: true,
            avx_vnni: true,
            ..Features::default()
        };
        assert_eq!(usable(all, false), all);
        let off = usable(all, true);
        assert_eq!(avx512_fields(&off).iter().filter(|(_, on)| *on).count(), 0, "{off:?}");
        assert!(!off.has_avx512() && off.has_avx2_fma() && off.vnni() == Vnni::Vex && off.bmi2);
    }

    /// Set in the copy of this test binary that [`the_switch_turns_avx512_off_for_the_process`]
    /// starts, so that the copy checks instead of starting another.
    const CHILD: &str = "GGML_RS_FEATURES_TEST_CHILD";

    /// The process-wide answer under `GGML_RS_NO_AVX512=1`, checked in a fresh process (the
    /// answer is cached at the first check, so this one cannot be asked again).
    #[test]
    fn the_switch_turns_avx512_off_for_the_process() {
        if std::env::var_os(CHILD).is_some() {
            let f = features();
            assert_eq!(avx512_fields(f).iter().filter(|(_, on)| *on).count(), 0, "{f:?}");
            assert!(!f.has_avx512() && f.vnni() != Vnni::Evex);
            return;
        }
        let module = module_path!().split_once("::").expect("a crate-qualified path").1;
        let name = format!("{module}::the_switch_turns_avx512_off_for_the_process");
        let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
            .args([name.as_str(), "--exact", "--test-threads=1"])
            .env("GGML_RS_NO_AVX512", "1")
            .env(CHILD, "1")
            .output()
            .expect("the test binary runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Every other file takes its answers from [`features`], so that the switch reaches it.
    #[test]
    fn no_other_source_asks_the_processor() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut dirs = vec![src];
        let mut askers = Vec::new();
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("a source folder") {
                let path = entry.expect("a folder entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("cpu/features.rs") {
                    let text = std::fs::read_to_string(&path).expect("a source file");
                    if text.contains("is_x86_feature_detected!") {
                        askers.push(path);
                    }
                }
            }
        }
        assert!(askers.is_empty(), "ask features() instead: {askers:?}");
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
