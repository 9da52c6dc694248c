//! The lattice grids of the 1-, 2- and 3-bit I-quants, and the nearest-neighbour maps their
//! quantizers search (what `ggml_quantize_init` builds and `ggml_quantize_free` releases).
//!
//! A grid is a set of lattice points: 8 coordinates with three levels each (`iq2_xxs`,
//! `iq2_xs`, `iq2_s`, `iq1_s`/`iq1_m`) or 4 coordinates with eight levels each (`iq3_xxs`,
//! `iq3_s`). A block stores, for each group of 8 or 4 values, the index of a grid point; the
//! format decides what number each level stands for. The point sets were chosen from how
//! often points occur in real model weights, so they are data: `iq_grids/*.bits` hold one bit
//! per lattice point (written by `scripts/gen-iq-grids` from the reference's tables), and a
//! grid's index order is increasing lattice number, where point `(c0, c1, ...)` has number
//! `c0 + b*c1 + b²*c2 + ...` for `b` levels.
//!
//! The sign tables the 2- and 3-bit formats share follow a rule and are computed here: a
//! group of 8 signs is stored as 7 bits, the eighth being whatever makes the number of
//! negative values even.
//!
//! Quantizers round a group to the nearest lattice point; when that point is not on the grid
//! they pick among its nearest grid points: those at the `n` smallest distances from it (one,
//! two or three distances depending on the grid), in order of distance, then index. Those lists
//! are built on first use, kept until [`free`], and rebuilt if needed again.

use std::sync::{Arc, Mutex, OnceLock};

use crate::core::types::Type;
use crate::quants::search::nearest_int;

/// One of the six I-quant grids.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Grid {
    Iq2Xxs,
    Iq2Xs,
    Iq2S,
    /// Shared by `iq1_s` and `iq1_m`.
    Iq1S,
    Iq3Xxs,
    Iq3S,
}

impl Grid {
    pub const ALL: [Grid; 6] = [Grid::Iq2Xxs, Grid::Iq2Xs, Grid::Iq2S, Grid::Iq1S, Grid::Iq3Xxs, Grid::Iq3S];

    /// The grid a type quantizes with, if any.
    pub fn of(ty: Type) -> Option<Grid> {
        match ty {
            Type::IQ2_XXS => Some(Grid::Iq2Xxs),
            Type::IQ2_XS => Some(Grid::Iq2Xs),
            Type::IQ2_S => Some(Grid::Iq2S),
            Type::IQ1_S | Type::IQ1_M => Some(Grid::Iq1S),
            Type::IQ3_XXS => Some(Grid::Iq3Xxs),
            Type::IQ3_S => Some(Grid::Iq3S),
            _ => None,
        }
    }

    /// Coordinates per point.
    pub const fn dims(self) -> usize {
        match self {
            Grid::Iq3Xxs | Grid::Iq3S => 4,
            _ => 8,
        }
    }

    /// Levels per coordinate.
    pub const fn levels(self) -> usize {
        match self {
            Grid::Iq3Xxs | Grid::Iq3S => 8,
            _ => 3,
        }
    }

    /// Number of points.
    pub const fn size(self) -> usize {
        match self {
            Grid::Iq2Xxs | Grid::Iq3Xxs => 256,
            Grid::Iq2Xs | Grid::Iq3S => 512,
            Grid::Iq2S => 1024,
            Grid::Iq1S => 2048,
        }
    }

    /// How many distinct distances a neighbour list spans.
    const fn neighbour_distances(self) -> usize {
        match self {
            Grid::Iq2S => 1,
            Grid::Iq2Xxs | Grid::Iq2Xs | Grid::Iq3Xxs => 2,
            Grid::Iq1S | Grid::Iq3S => 3,
        }
    }

    /// Number of lattice points (`levels ^ dims`).
    const fn lattice_size(self) -> usize {
        self.levels().pow(self.dims() as u32)
    }

    fn bitmap(self) -> &'static [u8] {
        match self {
            Grid::Iq2Xxs => include_bytes!("iq_grids/iq2xxs.bits"),
            Grid::Iq2Xs => include_bytes!("iq_grids/iq2xs.bits"),
            Grid::Iq2S => include_bytes!("iq_grids/iq2s.bits"),
            Grid::Iq1S => include_bytes!("iq_grids/iq1s.bits"),
            Grid::Iq3Xxs => include_bytes!("iq_grids/iq3xxs.bits"),
            Grid::Iq3S => include_bytes!("iq_grids/iq3s.bits"),
        }
    }

    fn slot(self) -> usize {
        self as usize
    }

    /// Lattice number of each grid point, in index order.
    fn numbers(self) -> &'static [u16] {
        static NUMBERS: [OnceLock<Vec<u16>>; 6] = [const { OnceLock::new() }; 6];
        NUMBERS[self.slot()].get_or_init(|| {
            let bits = self.bitmap();
            let numbers: Vec<u16> =
                (0..self.lattice_size()).filter(|&n| bits[n / 8] >> (n % 8) & 1 != 0).map(|n| n as u16).collect();
            crate::ggml_assert!(numbers.len() == self.size(), "grid {:?} has {} points", self, numbers.len());
            numbers
        })
    }

    /// The level of each coordinate of the lattice point numbered `number`.
    fn digits<const D: usize>(self, number: usize) -> [u8; D] {
        let base = self.levels();
        std::array::from_fn(|k| (number / base.pow(k as u32) % base) as u8)
    }

    /// The lattice number of a point given its levels.
    pub fn number(self, levels: &[i8]) -> usize {
        let base = self.levels();
        levels.iter().rev().fold(0, |n, &l| n * base + l as usize)
    }
}

/// Levels of every point of an 8-coordinate grid, by index.
pub fn points8(grid: Grid) -> &'static [[u8; 8]] {
    static POINTS: [OnceLock<Vec<[u8; 8]>>; 6] = [const { OnceLock::new() }; 6];
    crate::ggml_assert!(grid.dims() == 8, "{:?} has 4 coordinates", grid);
    POINTS[grid.slot()].get_or_init(|| grid.numbers().iter().map(|&n| grid.digits(n as usize)).collect())
}

/// Levels of every point of a 4-coordinate grid, by index.
pub fn points4(grid: Grid) -> &'static [[u8; 4]] {
    static POINTS: [OnceLock<Vec<[u8; 4]>>; 6] = [const { OnceLock::new() }; 6];
    crate::ggml_assert!(grid.dims() == 4, "{:?} has 8 coordinates", grid);
    POINTS[grid.slot()].get_or_init(|| grid.numbers().iter().map(|&n| grid.digits(n as usize)).collect())
}

/// The full 8 signs of a group from its 7 stored bits: bit 7 makes the count of set bits even.
#[inline]
pub fn signs_from_seven(bits: u8) -> u8 {
    let bits = bits & 0x7f;
    bits | (((bits.count_ones() & 1) as u8) << 7)
}

/// The eight signs of a group stored as seven bits (ggml's `ksigns_iq2xs`): bit 7 is set when
/// that makes the count of set bits even.
pub static SEVEN_BIT_SIGNS: [u8; 128] = {
    let mut table = [0u8; 128];
    let mut i = 0;
    while i < 128 {
        table[i] = i as u8 | (((i as u8).count_ones() as u8 & 1) << 7);
        i += 1;
    }
    table
};

/// Eight sign bits spread to bytes: byte j is 0xff where bit j is set, else 0.
pub static SIGN_MASKS: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut j = 0;
        while j < 8 {
            if i >> j & 1 != 0 {
                table[i] |= 0xff << (8 * j);
            }
            j += 1;
        }
        i += 1;
    }
    table
};

/// [`SEVEN_BIT_SIGNS`] spread to bytes: byte j is -1 where bit j is set, else 1 (ggml's
/// `keven_signs_q2xs`), for multiplying signs onto 8 values at once.
pub static SEVEN_BIT_SIGN_BYTES: [u64; 128] = {
    let mut table = [0u64; 128];
    let mut i = 0;
    while i < 128 {
        table[i] = SIGN_MASKS[SEVEN_BIT_SIGNS[i] as usize] | 0x0101_0101_0101_0101;
        i += 1;
    }
    table
};

/// What a lattice point maps to.
pub enum Lookup<'a> {
    /// The point is on the grid, at this index.
    OnGrid(usize),
    /// It is not; these grid indices are its nearest grid points.
    Near(&'a [u16]),
}

#[derive(Clone, Copy)]
enum Slot {
    OnGrid(u16),
    Near { start: u32, len: u32 },
}

/// Every lattice point's grid index or list of nearest grid points.
pub struct Neighbours {
    slots: Vec<Slot>,
    lists: Vec<u16>,
}

impl Neighbours {
    pub fn lookup(&self, number: usize) -> Lookup<'_> {
        match self.slots[number] {
            Slot::OnGrid(index) => Lookup::OnGrid(index.into()),
            Slot::Near { start, len } => Lookup::Near(&self.lists[start as usize..(start + len) as usize]),
        }
    }

    fn build(grid: Grid) -> Neighbours {
        // Squared distances (in level units, which order points as ggml's odd coordinates
        // do) split into two halves of the coordinates, each looked up in a table.
        let base = grid.levels();
        let half = base.pow(grid.dims() as u32 / 2);
        let table: Vec<u32> = (0..half * half)
            .map(|ab| {
                let (mut a, mut b) = (ab / half, ab % half);
                let mut d2 = 0;
                while a > 0 || b > 0 {
                    let diff = (a % base) as i32 - (b % base) as i32;
                    d2 += (diff * diff) as u32;
                    a /= base;
                    b /= base;
                }
                d2
            })
            .collect();
        let halves: Vec<(usize, usize)> =
            grid.numbers().iter().map(|&n| (usize::from(n) % half, usize::from(n) / half)).collect();

        let mut slots = vec![Slot::OnGrid(0); grid.lattice_size()];
        let mut on_grid = vec![false; grid.lattice_size()];
        for (index, &n) in grid.numbers().iter().enumerate() {
            slots[usize::from(n)] = Slot::OnGrid(index as u16);
            on_grid[usize::from(n)] = true;
        }
        let wanted = grid.neighbour_distances();
        let mut lists = Vec::new();
        let mut dist = vec![0u32; grid.size()];
        for number in (0..grid.lattice_size()).filter(|&n| !on_grid[n]) {
            let low = &table[number % half * half..][..half];
            let high = &table[number / half * half..][..half];
            let mut present = [false; 256];
            for (d, &(l, h)) in dist.iter_mut().zip(&halves) {
                *d = low[l] + high[h];
                present[*d as usize] = true;
            }
            // The `wanted` smallest distances that occur; the list holds every grid point at
            // one of them, nearest first, then by index.
            let start = lists.len() as u32;
            for d in (0..256u32).filter(|&d| present[d as usize]).take(wanted) {
                lists.extend((0..grid.size()).filter(|&j| dist[j] == d).map(|j| j as u16));
            }
            slots[number] = Slot::Near { start, len: lists.len() as u32 - start };
        }
        Neighbours { slots, lists }
    }
}

static MAPS: [Mutex<Option<Arc<Neighbours>>>; 6] = [const { Mutex::new(None) }; 6];

fn cache(grid: Grid) -> std::sync::MutexGuard<'static, Option<Arc<Neighbours>>> {
    MAPS[grid.slot()].lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The neighbour lists of `grid`, built now if they are not already.
pub fn neighbours(grid: Grid) -> Arc<Neighbours> {
    let mut slot = cache(grid);
    slot.get_or_insert_with(|| Arc::new(Neighbours::build(grid))).clone()
}

/// `ggml_quantize_init`: prepares what quantizing to `ty` needs (nothing for most types).
pub fn init(ty: Type) {
    if let Some(grid) = Grid::of(ty) {
        init_grid(grid);
    }
}

/// The 8-coordinate grid a type quantizes with (`iq2xs_init_impl`'s argument); aborts for
/// other types.
pub fn grid8_of(ty: Type) -> Grid {
    match Grid::of(ty) {
        Some(grid) if grid.dims() == 8 => grid,
        _ => crate::ggml_abort!("{} does not quantize with an 8-coordinate grid", ty.name()),
    }
}

/// The 4-coordinate grid with `size` points (`iq3xs_init_impl`'s argument); aborts for other
/// sizes.
pub fn grid4_of(size: i32) -> Grid {
    match size {
        256 => Grid::Iq3Xxs,
        512 => Grid::Iq3S,
        _ => crate::ggml_abort!("no 3-bit grid has {} points", size),
    }
}

/// Builds the neighbour lists of one grid unless they are built already.
pub fn init_grid(grid: Grid) {
    neighbours(grid);
}

/// Releases the neighbour lists of one grid (quantizers still using them keep their copy).
pub fn free_grid(grid: Grid) {
    cache(grid).take();
}

/// `ggml_quantize_free`: releases every grid's neighbour lists.
pub fn free() {
    for grid in Grid::ALL {
        free_grid(grid);
    }
}

/// Whether the neighbour lists of `grid` are built.
pub fn is_initialized(grid: Grid) -> bool {
    cache(grid).is_some()
}

// ---- rounding groups of values onto a grid ----

/// Which groups the last pass of [`GridSearch::run`] rounds again at the fitted scale.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refit {
    /// Every group, whenever the fitted scale is positive.
    All,
    /// Only the groups that fell back to a neighbour at the chosen trial scale, if any did.
    OffGrid,
    /// Every group, if any fell back at the chosen trial scale (or no trial was accepted).
    AllIfAnyOffGrid,
}

/// The scale search of the 2- and 3-bit lattice formats. Values come folded to their
/// magnitudes (`xval`); each group of `dims` values is rounded to levels `0..levels` at a trial
/// inverse scale (`x ≈ scale * (2*level + 1)`), moved to the best of its neighbours when the
/// rounded point is not on the grid, and the trial whose weighted least-squares fit explains
/// the most is kept. The trials are `(2*levels - 1 + step*delta) / max` for `step` in
/// `-steps..=steps`.
pub(crate) struct GridSearch {
    pub grid: Grid,
    pub steps: i32,
    pub delta: f32,
    pub refit: Refit,
}

impl GridSearch {
    /// Fills `levels` with a point of the grid for every group and returns the scale.
    /// `scale` is the answer if no trial is accepted and `max` the trials' reference
    /// magnitude; `weight` judges fits, `waux` neighbours.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        map: &Neighbours,
        xval: &[f32],
        weight: &[f32],
        waux: &[f32],
        mut scale: f32,
        max: f32,
        levels: &mut [i8],
    ) -> f32 {
        let dims = self.grid.dims();
        let n = xval.len();
        let groups = n / dims;
        let top = (2 * self.grid.levels() - 1) as f32;
        let mut on_grid = [self.refit != Refit::AllIfAnyOffGrid; 8];
        let mut trial_on_grid = [true; 8];
        let mut trial = [0i8; 32];
        let mut best = 0.0f32;
        for step in -self.steps..=self.steps {
            let id = (top + step as f32 * self.delta) / max;
            let this_scale = 1.0 / id;
            for (k, on) in trial_on_grid[..groups].iter_mut().enumerate() {
                let span = k * dims..(k + 1) * dims;
                *on = self.round_group(map, &xval[span.clone()], &waux[span.clone()], id, this_scale, &mut trial[span]);
            }
            let (sumqx, sumq2) = fit_sums(xval, weight, &trial[..n]);
            if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
                scale = sumqx / sumq2;
                best = scale * sumqx;
                levels[..n].copy_from_slice(&trial[..n]);
                on_grid = trial_on_grid;
            }
        }
        let refit = match self.refit {
            Refit::All => true,
            Refit::OffGrid | Refit::AllIfAnyOffGrid => on_grid[..groups].iter().any(|&g| !g),
        };
        if refit && scale > 0.0 {
            let id = 1.0 / scale;
            for (k, &on) in on_grid[..groups].iter().enumerate() {
                if self.refit == Refit::OffGrid && on {
                    continue;
                }
                let span = k * dims..(k + 1) * dims;
                self.round_group(map, &xval[span.clone()], &waux[span.clone()], id, scale, &mut levels[span]);
            }
            let (sumqx, sumq2) = fit_sums(xval, weight, &levels[..n]);
            if sumq2 > 0.0 {
                scale = sumqx / sumq2;
            }
        }
        scale
    }

    /// Rounds one group at inverse scale `id`; off the grid, takes the neighbour that best
    /// fits at `scale`. Returns whether the rounded point was on the grid.
    fn round_group(&self, map: &Neighbours, x: &[f32], w: &[f32], id: f32, scale: f32, out: &mut [i8]) -> bool {
        let top = self.grid.levels() as i32 - 1;
        for (l, &v) in out.iter_mut().zip(x) {
            *l = nearest_int(0.5 * (id * v - 1.0)).clamp(0, top) as i8;
        }
        match map.lookup(self.grid.number(out)) {
            Lookup::OnGrid(_) => true,
            Lookup::Near(list) => {
                let best = best_neighbour(self.grid, list, x, w, scale);
                for (l, &p) in out.iter_mut().zip(point_levels(self.grid, best)) {
                    *l = p as i8;
                }
                false
            }
        }
    }
}

/// The levels of grid point `index`, whichever the grid's dimension.
pub(crate) fn point_levels(grid: Grid, index: usize) -> &'static [u8] {
    match grid.dims() {
        8 => &points8(grid)[index],
        _ => &points4(grid)[index],
    }
}

/// The grid index of a group of levels that must be on the grid.
pub(crate) fn index_on_grid(map: &Neighbours, grid: Grid, levels: &[i8]) -> usize {
    match map.lookup(grid.number(levels)) {
        Lookup::OnGrid(index) => index,
        Lookup::Near(_) => crate::ggml_abort!("found point {:?} not on grid {:?}", levels, grid),
    }
}

/// The neighbour with the least weighted squared error at `scale` (the first of equals).
fn best_neighbour(grid: Grid, list: &[u16], x: &[f32], w: &[f32], scale: f32) -> usize {
    let mut best_d2 = f32::MAX;
    let mut best = None;
    for &j in list {
        let mut d2 = 0.0f32;
        for ((&l, &v), &wi) in point_levels(grid, j.into()).iter().zip(x).zip(w) {
            let diff = scale * (2 * l + 1) as f32 - v;
            d2 += wi * diff * diff;
        }
        if d2 < best_d2 {
            best_d2 = d2;
            best = Some(j.into());
        }
    }
    best.unwrap_or_else(|| crate::ggml_abort!("no neighbour of a {:?} point fits", grid))
}

/// Σ w·x·q and Σ w·q² for the odd multiples `q = 2*level + 1`.
fn fit_sums(xval: &[f32], weight: &[f32], levels: &[i8]) -> (f32, f32) {
    let (mut sumqx, mut sumq2) = (0.0f32, 0.0f32);
    for ((&v, &w), &l) in xval.iter().zip(weight).zip(levels) {
        let q = (2 * i32::from(l) + 1) as f32;
        sumqx += w * v * q;
        sumq2 += w * q * q;
    }
    (sumqx, sumq2)
}

/// Folds a group of 8 values to magnitudes in `xval` and returns its sign bits (bit i set for
/// a negative value). With `even`, an odd number of negatives is made even by flipping the
/// value that matters least (its magnitude goes negative), since only 7 sign bits are stored.
pub(crate) fn fold_signs(xb: &[f32], weight: &[f32], xval: &mut [f32], even: bool) -> u8 {
    let mut signs = 0u8;
    for (i, (out, &v)) in xval.iter_mut().zip(&xb[..8]).enumerate() {
        if v >= 0.0 {
            *out = v;
        } else {
            *out = -v;
            signs |= 1 << i;
        }
    }
    if even && signs.count_ones() % 2 == 1 {
        let importance = |i: usize| weight[i] * xb[i] * xb[i];
        let mut imin = 0;
        let mut min = importance(0);
        for i in 1..8 {
            if importance(i) < min {
                min = importance(i);
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        signs ^= 1 << imin;
    }
    signs
}

/// ggml's check that a sub-block scale came out non-negative (and not NaN).
pub(crate) fn check_scale(scale: f32) {
    if scale.is_nan() || scale < 0.0 {
        crate::ggml_abort!("GGML_ASSERT(scale >= 0) failed");
    }
}

/// The 4-bit sub-block scale code of the 2- and 3-bit formats: `scale ≈ d * (2*code + 1)`.
pub(crate) fn scale_code(id: f32, scale: f32) -> u8 {
    nearest_int(0.5 * (id * scale - 1.0)).clamp(0, 15) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_table_completes_the_parity() {
        for bits in 0..128u8 {
            assert_eq!(SEVEN_BIT_SIGNS[usize::from(bits)], signs_from_seven(bits));
            assert_eq!(SEVEN_BIT_SIGNS[usize::from(bits)].count_ones() % 2, 0);
            for (j, &b) in SEVEN_BIT_SIGN_BYTES[usize::from(bits)].to_le_bytes().iter().enumerate() {
                assert_eq!(b as i8, if SEVEN_BIT_SIGNS[usize::from(bits)] >> j & 1 != 0 { -1 } else { 1 });
            }
        }
    }

    /// The values of a table in the reference's ggml-common.h, when its source tree is named by
    /// `GGML_REF_SRC` (scripts/test sets it from `scripts/reference env`).
    fn reference_table(name: &str) -> Option<Vec<u64>> {
        let Some(src) = std::env::var_os("GGML_REF_SRC") else {
            eprintln!("{name}: not compared with the reference (GGML_REF_SRC unset)");
            return None;
        };
        let path = std::path::Path::new(&src).join("ggml/src/ggml-common.h");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let begin = text.find(&format!(", {name},"))?;
        let body = &text[begin..];
        let body = &body[body.find(')')? + 1..body.find("GGML_TABLE_END")?];
        Some(
            body.split(|c: char| c == ',' || c.is_whitespace())
                .filter(|t| !t.is_empty())
                .map(|t| match t.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
                    None => t.parse().unwrap(),
                })
                .collect(),
        )
    }

    fn bytes_of(grid: Grid, index: usize, values: &[u8]) -> u64 {
        let levels: Vec<u8> = match grid.dims() {
            8 => points8(grid)[index].to_vec(),
            _ => points4(grid)[index].to_vec(),
        };
        levels.iter().enumerate().map(|(k, &l)| u64::from(values[l as usize]) << (8 * k)).sum()
    }

    #[test]
    fn grids_match_the_reference_tables() {
        let cases: [(Grid, &str, &[u8]); 6] = [
            (Grid::Iq2Xxs, "iq2xxs_grid", &[0x08, 0x19, 0x2b]),
            (Grid::Iq2Xs, "iq2xs_grid", &[0x08, 0x19, 0x2b]),
            (Grid::Iq2S, "iq2s_grid", &[0x08, 0x19, 0x2b]),
            (Grid::Iq1S, "iq1s_grid", &[0xff, 0x00, 0x01]),
            (Grid::Iq3Xxs, "iq3xxs_grid", &[4, 12, 20, 28, 36, 44, 52, 62]),
            (Grid::Iq3S, "iq3s_grid", &[1, 3, 5, 7, 9, 11, 13, 15]),
        ];
        for (grid, name, values) in cases {
            let ours: Vec<u64> = (0..grid.size()).map(|i| bytes_of(grid, i, values)).collect();
            if let Some(reference) = reference_table(name) {
                assert_eq!(ours, reference, "{name}");
            }
            assert_eq!(ours.len(), grid.size());
        }
    }

    #[test]
    fn sign_tables_follow_the_parity_rule() {
        let ours: Vec<u64> = (0..128u8).map(|i| signs_from_seven(i).into()).collect();
        if let Some(reference) = reference_table("ksigns_iq2xs") {
            assert_eq!(ours, reference);
        }
        assert!(ours.iter().all(|s| s.count_ones() % 2 == 0));
    }

    #[test]
    fn neighbour_lists_are_nearest_first() {
        let grid = Grid::Iq3Xxs;
        let map = neighbours(grid);
        let points = points4(grid);
        let dist =
            |a: &[u8; 4], b: [u8; 4]| -> i32 { a.iter().zip(b).map(|(&x, y)| (x as i32 - y as i32).pow(2)).sum() };
        let mut off_grid = 0;
        for number in 0..4096 {
            let point: [u8; 4] = grid.digits(number);
            match map.lookup(number) {
                Lookup::OnGrid(i) => assert_eq!(points[i], point),
                Lookup::Near(list) => {
                    off_grid += 1;
                    let d: Vec<i32> = list.iter().map(|&j| dist(&points[j as usize], point)).collect();
                    assert!(d.windows(2).all(|w| w[0] <= w[1]));
                    let best = points.iter().map(|p| dist(p, point)).min().unwrap();
                    assert_eq!(d[0], best);
                    let mut distinct = d.clone();
                    distinct.dedup();
                    assert!(distinct.len() <= 2);
                }
            }
        }
        assert_eq!(off_grid, 4096 - 256);
        free_grid(grid);
        assert!(!is_initialized(grid));
        init(Type::IQ3_XXS);
        assert!(is_initialized(grid));
    }

    /// Compares with outputs of the reference library written by a throwaway C harness
    /// (`ggml_quantize_chunk` and the `to_float` traits on seeded inputs, and `to_float` on
    /// random bytes) into `$IQ_REFERENCE_DIR` (default `/tmp/iqharness/out`), listed in its
    /// `manifest.txt` as `name type nrows n_per_row imatrix` (imatrix -1: dequantize only).
    #[test]
    #[ignore = "needs reference outputs on disk"]
    fn matches_reference_outputs() {
        use crate::quants::iq1::{BlockIq1M, BlockIq1S};
        use crate::quants::iq2::{BlockIq2S, BlockIq2Xs, BlockIq2Xxs};
        use crate::quants::iq3::{BlockIq3S, BlockIq3Xxs};
        use crate::quants::{BlockFormat, blocks, blocks_mut, dequantize_row, quantize_rows};

        fn floats(bytes: &[u8]) -> Vec<f32> {
            bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
        }

        /// Returns (quantization mismatches, dequantization mismatches) in bytes and values.
        fn check<B: BlockFormat>(dir: &std::path::Path, name: &str, n_per_row: usize, imatrix: i32) -> (usize, usize) {
            let read = |ext: &str| std::fs::read(dir.join(format!("{name}.{ext}"))).unwrap();
            let q_ref = read("q");
            let y_ref = floats(&read("y"));
            let mut y = vec![0.0f32; y_ref.len()];
            dequantize_row(blocks::<B>(&q_ref), &mut y);
            let deq_bad = y.iter().zip(&y_ref).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
            if imatrix < 0 {
                return (0, deq_bad);
            }
            let x = floats(&read("x"));
            let w = floats(&read("w"));
            let mut q = vec![0u8; q_ref.len()];
            quantize_rows::<B>(&x, blocks_mut(&mut q), n_per_row, (imatrix == 1).then_some(&w[..]));
            let q_bad = q.iter().zip(&q_ref).filter(|(a, b)| a != b).count();
            (q_bad, deq_bad)
        }

        let dir = std::env::var_os("IQ_REFERENCE_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| "/tmp/iqharness/out".into());
        let manifest = std::fs::read_to_string(dir.join("manifest.txt")).unwrap();
        let mut failures = Vec::new();
        let mut cases = 0;
        for line in manifest.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (name, ty) = (f[0], Type(f[1].parse().unwrap()));
            let (n_per_row, imatrix): (usize, i32) = (f[3].parse().unwrap(), f[4].parse().unwrap());
            let (q_bad, deq_bad) = match ty {
                Type::IQ2_XXS => check::<BlockIq2Xxs>(&dir, name, n_per_row, imatrix),
                Type::IQ2_XS => check::<BlockIq2Xs>(&dir, name, n_per_row, imatrix),
                Type::IQ2_S => check::<BlockIq2S>(&dir, name, n_per_row, imatrix),
                Type::IQ3_XXS => check::<BlockIq3Xxs>(&dir, name, n_per_row, imatrix),
                Type::IQ3_S => check::<BlockIq3S>(&dir, name, n_per_row, imatrix),
                Type::IQ1_S => check::<BlockIq1S>(&dir, name, n_per_row, imatrix),
                Type::IQ1_M => check::<BlockIq1M>(&dir, name, n_per_row, imatrix),
                _ => panic!("unexpected type in {line}"),
            };
            cases += 1;
            if q_bad + deq_bad > 0 {
                failures.push(format!("{name}: {q_bad} bytes differ, {deq_bad} values differ"));
            }
        }
        assert!(failures.is_empty(), "{} of {cases} cases differ:\n{}", failures.len(), failures.join("\n"));
        eprintln!("{cases} cases identical");
    }
}
