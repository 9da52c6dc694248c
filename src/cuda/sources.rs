//! The kernel sources as NVRTC compiles them: each `.cu` file of `kernels/`, embedded at build
//! time, and the prelude every one of them includes as the in-memory header "prelude.cuh".

include!(concat!(env!("OUT_DIR"), "/cuda_sources.rs"));

/// The header every kernel source includes.
pub const PRELUDE: &str = include_str!("kernels/prelude.cuh");

/// The name under which the kernels include [`PRELUDE`].
pub const PRELUDE_NAME: &str = "prelude.cuh";

/// The text of the source whose file stem is `stem`.
pub fn source(stem: &str) -> Option<&'static str> {
    SOURCES.iter().find(|&&(s, _)| s == stem).map(|&(_, text)| text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_includes_the_prelude() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/cuda/kernels");
        let on_disk = std::fs::read_dir(dir)
            .expect("the kernel directory")
            .filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "cu")))
            .count();
        assert_eq!(SOURCES.len(), on_disk, "every .cu file is embedded");
        for (stem, text) in SOURCES {
            assert!(text.contains("#include \"prelude.cuh\""), "{stem}.cu does not include the prelude");
        }
        assert!(source("matvec").is_some_and(|t| t.contains("mul_mat_vec")));
        assert!(source("no-such-file").is_none());
    }
}
