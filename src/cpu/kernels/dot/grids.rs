//! The lattice grids as the dot products read them: every point already turned into the bytes
//! its coordinates stand for, eight to a `u64` (or four to a `u32`), byte k for coordinate k,
//! so that one load gives the weights of a group and SIMD code can place it in a vector.

use std::sync::OnceLock;

use crate::quants::iq_grids::{Grid, points4, points8};
use crate::quants::iq2::GRID_VALUES;
use crate::quants::iq3::XXS_VALUES;

/// The grids of every I-quant format, point by index.
pub struct ValueGrids {
    pub iq2_xxs: [u64; 256],
    pub iq2_xs: [u64; 512],
    pub iq2_s: [u64; 1024],
    /// `iq1_s` and `iq1_m`: coordinates -1, 0, 1 as signed bytes times 8 (-8, 0, 8), so that
    /// the ±1/8 shift of a group is a whole ±1 on top.
    pub iq1_s: [u64; 2048],
    pub iq3_xxs: [u32; 256],
    /// Odd levels 1..15.
    pub iq3_s: [u32; 512],
}

/// The 8-coordinate points of `grid`, each coordinate level mapped through `value`.
fn packed8<const N: usize>(grid: Grid, value: impl Fn(u8) -> u8) -> [u64; N] {
    let points = points8(grid);
    crate::ggml_assert!(points.len() == N, "grid {:?} has {} points, not {}", grid, points.len(), N);
    std::array::from_fn(|i| u64::from_le_bytes(points[i].map(&value)))
}

/// The 4-coordinate points of `grid`, each coordinate level mapped through `value`.
fn packed4<const N: usize>(grid: Grid, value: impl Fn(u8) -> u8) -> [u32; N] {
    let points = points4(grid);
    crate::ggml_assert!(points.len() == N, "grid {:?} has {} points, not {}", grid, points.len(), N);
    std::array::from_fn(|i| u32::from_le_bytes(points[i].map(&value)))
}

/// The grids, built on first use.
pub fn grids() -> &'static ValueGrids {
    static GRIDS: OnceLock<Box<ValueGrids>> = OnceLock::new();
    GRIDS.get_or_init(|| {
        let iq2 = |level: u8| GRID_VALUES[usize::from(level)];
        Box::new(ValueGrids {
            iq2_xxs: packed8(Grid::Iq2Xxs, iq2),
            iq2_xs: packed8(Grid::Iq2Xs, iq2),
            iq2_s: packed8(Grid::Iq2S, iq2),
            iq1_s: packed8(Grid::Iq1S, |level| ((i8::try_from(level).unwrap_or(1) - 1) * 8) as u8),
            iq3_xxs: packed4(Grid::Iq3Xxs, |level| XXS_VALUES[usize::from(level)]),
            iq3_s: packed4(Grid::Iq3S, |level| 2 * level + 1),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_hold_the_values_of_the_levels() {
        let g = grids();
        // the first iq2_xxs point is the origin corner: every coordinate at level 0
        assert_eq!(g.iq2_xxs[0], 0x0808_0808_0808_0808);
        for (k, &p) in points8(Grid::Iq2S)[1000].iter().enumerate() {
            assert_eq!(g.iq2_s[1000].to_le_bytes()[k], GRID_VALUES[usize::from(p)]);
        }
        for (k, &p) in points8(Grid::Iq1S)[77].iter().enumerate() {
            assert_eq!(i32::from(g.iq1_s[77].to_le_bytes()[k] as i8), 8 * (i32::from(p) - 1));
        }
        for (k, &p) in points4(Grid::Iq3S)[300].iter().enumerate() {
            assert_eq!(g.iq3_s[300].to_le_bytes()[k], 2 * p + 1);
        }
        assert!(g.iq3_xxs.iter().all(|&p| p.to_le_bytes().iter().all(|b| XXS_VALUES.contains(b))));
    }
}
