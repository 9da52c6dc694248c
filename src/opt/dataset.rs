//! `struct ggml_opt_dataset`: data points and labels held in two host tensors, cut into
//! shards of `ndata_shard` points. Shuffling permutes the shards; a batch is a run of shards
//! in permuted order, copied into the caller's tensors or host memory.
//!
//! The shuffle draws from a Mersenne Twister exactly as ggml's `std::shuffle` over a
//! `std::mt19937` does with libstdc++, so a given seed and call sequence give the same order.

use crate::backend::buffer::{self, BufferPtr};
use crate::backend::{host_buffer, tallocr};
use crate::core::context::{Context, InitParams, OBJECT_SIZE, TENSOR_SIZE};
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;

/// `std::mt19937`: the 32-bit Mersenne Twister (MT19937).
#[derive(Clone)]
pub struct Mt19937 {
    state: [u32; Mt19937::N],
    index: usize,
}

impl Mt19937 {
    const N: usize = 624;
    const M: usize = 397;
    /// The seed of a default-constructed `std::mt19937`.
    pub const DEFAULT_SEED: u32 = 5489;

    pub fn new(seed: u32) -> Mt19937 {
        let mut state = [0u32; Self::N];
        state[0] = seed;
        for i in 1..Self::N {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32.wrapping_mul(prev ^ (prev >> 30)).wrapping_add(i as u32);
        }
        Mt19937 { state, index: Self::N }
    }

    fn twist(&mut self) {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        const MATRIX_A: u32 = 0x9908_b0df;
        for i in 0..Self::N {
            let y = (self.state[i] & UPPER) | (self.state[(i + 1) % Self::N] & LOWER);
            let mag = if y & 1 != 0 { MATRIX_A } else { 0 };
            self.state[i] = self.state[(i + Self::M) % Self::N] ^ (y >> 1) ^ mag;
        }
        self.index = 0;
    }

    pub fn next_u32(&mut self) -> u32 {
        if self.index >= Self::N {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// A uniform integer in `[0, range)`, `1 <= range <= 2^32`, drawn as libstdc++'s
    /// `uniform_int_distribution` does from a 32-bit engine: a 64-bit product whose low half
    /// decides rejection (Lemire's method).
    fn below_u32(&mut self, range: u64) -> u64 {
        if range == 1 << 32 {
            return u64::from(self.next_u32());
        }
        let range = range as u32;
        let mut product = u64::from(self.next_u32()) * u64::from(range);
        if (product as u32) < range {
            let threshold = range.wrapping_neg() % range;
            while (product as u32) < threshold {
                product = u64::from(self.next_u32()) * u64::from(range);
            }
        }
        product >> 32
    }

    /// A uniform integer in `[0, max]` (libstdc++'s `uniform_int_distribution<uint64_t>`),
    /// combining several draws when the range exceeds 32 bits.
    pub fn uniform(&mut self, max: u64) -> u64 {
        const ENGINE_RANGE: u64 = u32::MAX as u64;
        if max <= ENGINE_RANGE {
            return self.below_u32(max + 1);
        }
        loop {
            let high = (ENGINE_RANGE + 1).wrapping_mul(self.uniform(max / (ENGINE_RANGE + 1)));
            let value = high.wrapping_add(u64::from(self.next_u32()));
            if value <= max && value >= high {
                return value;
            }
        }
    }

    /// `std::shuffle` as libstdc++ implements it: when the squared length fits the engine's
    /// range, positions are drawn two at a time from one number.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        let n = items.len() as u64;
        if n == 0 {
            return;
        }
        if u64::from(u32::MAX) / n >= n {
            let mut i = 1usize;
            if n.is_multiple_of(2) {
                let j = self.uniform(1) as usize;
                items.swap(i, j);
                i += 1;
            }
            while i < items.len() {
                let range = i as u64 + 1;
                let x = self.uniform(range * (range + 1) - 1);
                items.swap(i, (x / (range + 1)) as usize);
                items.swap(i + 1, (x % (range + 1)) as usize);
                i += 2;
            }
            return;
        }
        for i in 1..items.len() {
            let j = self.uniform(i as u64) as usize;
            items.swap(i, j);
        }
    }
}

impl Default for Mt19937 {
    fn default() -> Self {
        Mt19937::new(Mt19937::DEFAULT_SEED)
    }
}

/// A dataset: `ndata` points of `ne_datapoint` values with `ne_label` labels each.
pub struct Dataset {
    /// Holds the two tensors (metadata only; their data is in `buf`).
    _ctx: Box<Context>,
    buf: Option<BufferPtr>,
    data: TensorPtr,
    labels: Option<TensorPtr>,
    ndata: i64,
    ndata_shard: i64,
    /// Bytes of data per shard.
    nbs_data: usize,
    /// Bytes of labels per shard (0 without labels).
    nbs_labels: usize,
    /// Shard order: batch `i` is made of shards `permutation[i*k..(i+1)*k]`.
    permutation: Vec<i64>,
}

impl Dataset {
    /// `ggml_opt_dataset_init`: tensors `[ne_datapoint, ndata]` and (if `ne_label > 0`)
    /// `[ne_label, ndata]` in host memory, shards in their natural order.
    pub fn new(
        type_data: Type,
        type_label: Type,
        ne_datapoint: i64,
        ne_label: i64,
        ndata: i64,
        ndata_shard: i64,
    ) -> Dataset {
        crate::ggml_assert!(ne_datapoint > 0, "a data point needs at least one value, not {}", ne_datapoint);
        crate::ggml_assert!(ne_label >= 0, "negative label count {}", ne_label);
        crate::ggml_assert!(ndata > 0, "a dataset needs at least one data point, not {}", ndata);
        crate::ggml_assert!(ndata_shard > 0, "a shard needs at least one data point, not {}", ndata_shard);

        let mut ctx = Context::new(InitParams {
            mem_size: 2 * (OBJECT_SIZE + TENSOR_SIZE),
            mem_buffer: std::ptr::null_mut(),
            no_alloc: true,
        });
        let data = ctx.new_tensor(type_data, &[ne_datapoint, ndata]);
        let per_shard = |t: TensorPtr| {
            let bytes = t.nbytes() as u128 * ndata_shard as u128 / ndata as u128;
            usize::try_from(bytes).unwrap_or_else(|_| crate::ggml_abort!("shard of {} bytes is too large", bytes))
        };
        let nbs_data = per_shard(data);
        let (labels, nbs_labels) = if ne_label > 0 {
            let labels = ctx.new_tensor(type_label, &[ne_label, ndata]);
            (Some(labels), per_shard(labels))
        } else {
            (None, 0)
        };
        let buf = tallocr::alloc_ctx_tensors(&ctx, host_buffer::cpu_buffer_type());
        crate::ggml_assert!(buf.is_some(), "failed to allocate the dataset's host memory");

        Dataset {
            _ctx: ctx,
            buf,
            data,
            labels,
            ndata,
            ndata_shard,
            nbs_data,
            nbs_labels,
            permutation: (0..ndata / ndata_shard).collect(),
        }
    }

    pub fn ndata(&self) -> i64 {
        self.ndata
    }

    /// All data points, `[ne_datapoint, ndata]`.
    pub fn data(&self) -> TensorPtr {
        self.data
    }

    /// All labels, `[ne_label, ndata]`, if the dataset has labels.
    pub fn labels(&self) -> Option<TensorPtr> {
        self.labels
    }

    /// The current shard order.
    pub fn permutation(&self) -> &[i64] {
        &self.permutation
    }

    /// Bytes of labels that come with `nb_data_batch` bytes of data.
    pub fn labels_bytes_for(&self, nb_data_batch: usize) -> usize {
        self.shards_in(nb_data_batch) * self.nbs_labels
    }

    /// Shuffles the shards of the first `idata` points (all shards when `idata` is negative).
    pub fn shuffle(&mut self, rng: &mut Mt19937, idata: i64) {
        crate::ggml_assert!(idata <= self.ndata, "shuffling {} of {} data points", idata, self.ndata);
        if idata < 0 {
            rng.shuffle(&mut self.permutation);
            return;
        }
        crate::ggml_assert!(
            idata % self.ndata_shard == 0,
            "{} data points are not a whole number of shards of {}",
            idata,
            self.ndata_shard
        );
        let nshards = (idata / self.ndata_shard) as usize;
        rng.shuffle(&mut self.permutation[..nshards]);
    }

    /// Number of shards in a batch of `nb_data_batch` bytes of data.
    fn shards_in(&self, nb_data_batch: usize) -> usize {
        crate::ggml_assert!(
            self.nbs_data > 0 && nb_data_batch.is_multiple_of(self.nbs_data),
            "a batch of {} bytes is not a whole number of shards of {} bytes",
            nb_data_batch,
            self.nbs_data
        );
        nb_data_batch / self.nbs_data
    }

    /// The shards of batch `ibatch` of `shards_per_batch` shards, in permuted order.
    fn batch_shards(&self, ibatch: i64, shards_per_batch: usize) -> &[i64] {
        let start = usize::try_from(ibatch).ok().and_then(|b| b.checked_mul(shards_per_batch));
        let range = start.and_then(|s| Some(s..s.checked_add(shards_per_batch)?));
        match range.and_then(|r| self.permutation.get(r)) {
            Some(shards) => shards,
            None => crate::ggml_abort!(
                "batch {} of {} shards is past the {} shards of the dataset",
                ibatch,
                shards_per_batch,
                self.permutation.len()
            ),
        }
    }

    /// Bytes of shard `ishard` of the dataset's tensor `t` (`per_shard` bytes per shard).
    fn shard_bytes(&self, t: TensorPtr, ishard: i64, per_shard: usize) -> &[u8] {
        let start = ishard as usize * per_shard;
        crate::ggml_assert!(start + per_shard <= t.nbytes(), "shard {} out of bounds", ishard);
        // SAFETY: `t` is one of this dataset's tensors, which live in a host buffer of
        // nbytes() bytes owned by the dataset; the range lies inside it (checked above).
        unsafe { std::slice::from_raw_parts(t.data.cast::<u8>().add(start), per_shard) }
    }

    /// `ggml_opt_dataset_get_batch`: copies batch `ibatch` into `data_batch` and, when the
    /// dataset has labels, into `labels_batch`; the batch size is `data_batch`'s size.
    pub fn get_batch(&self, data_batch: TensorPtr, labels_batch: Option<TensorPtr>, ibatch: i64) {
        crate::ggml_assert!(data_batch.is_contiguous(), "the data batch tensor must be contiguous");
        crate::ggml_assert!(
            labels_batch.is_none_or(|l| l.is_contiguous()),
            "the labels batch tensor must be contiguous"
        );
        crate::ggml_assert!(
            labels_batch.is_some() == self.labels.is_some(),
            "a labels batch must be given exactly when the dataset has labels"
        );
        crate::ggml_assert!(data_batch.type_ == self.data.type_, "data batch type differs from the dataset's");
        if let (Some(lb), Some(l)) = (labels_batch, self.labels) {
            crate::ggml_assert!(lb.type_ == l.type_, "labels batch type differs from the dataset's");
        }

        let shards_per_batch = self.shards_in(data_batch.nbytes());
        if let Some(lb) = labels_batch {
            crate::ggml_assert!(
                lb.nbytes() == shards_per_batch * self.nbs_labels,
                "labels batch of {} bytes does not match {} shards",
                lb.nbytes(),
                shards_per_batch
            );
        }

        for (i, &ishard) in self.batch_shards(ibatch, shards_per_batch).iter().enumerate() {
            buffer::tensor_set(data_batch, self.shard_bytes(self.data, ishard, self.nbs_data), i * self.nbs_data);
            if let (Some(lb), Some(l)) = (labels_batch, self.labels) {
                buffer::tensor_set(lb, self.shard_bytes(l, ishard, self.nbs_labels), i * self.nbs_labels);
            }
        }
    }

    /// `ggml_opt_dataset_get_batch_host`: as [`Dataset::get_batch`], into host memory; the
    /// labels slice must hold [`Dataset::labels_bytes_for`] bytes.
    pub fn get_batch_host(&self, data_batch: &mut [u8], labels_batch: Option<&mut [u8]>, ibatch: i64) {
        crate::ggml_assert!(
            labels_batch.is_some() == self.labels.is_some(),
            "a labels batch must be given exactly when the dataset has labels"
        );
        let shards_per_batch = self.shards_in(data_batch.len());
        let shards = self.batch_shards(ibatch, shards_per_batch);

        for (dst, &ishard) in data_batch.chunks_exact_mut(self.nbs_data).zip(shards) {
            dst.copy_from_slice(self.shard_bytes(self.data, ishard, self.nbs_data));
        }
        if let (Some(dst), Some(l)) = (labels_batch, self.labels) {
            crate::ggml_assert!(dst.len() == shards_per_batch * self.nbs_labels, "labels batch has the wrong size");
            if self.nbs_labels > 0 {
                for (dst, &ishard) in dst.chunks_exact_mut(self.nbs_labels).zip(shards) {
                    dst.copy_from_slice(self.shard_bytes(l, ishard, self.nbs_labels));
                }
            }
        }
    }
}

impl Drop for Dataset {
    fn drop(&mut self) {
        if let Some(buf) = self.buf.take() {
            buf.free();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dataset of 6 points [16*i, 16*i + 1] with labels [256*i].
    fn dataset(ndata_shard: i64) -> Dataset {
        let ds = Dataset::new(Type::F32, Type::F32, 2, 1, 6, ndata_shard);
        // SAFETY: the dataset's tensors are host memory of 12 and 6 floats.
        let (data, labels) = unsafe {
            (
                std::slice::from_raw_parts_mut(ds.data().data.cast::<f32>(), 12),
                std::slice::from_raw_parts_mut(ds.labels().unwrap().data.cast::<f32>(), 6),
            )
        };
        for i in 0..6 {
            data[2 * i] = (16 * i) as f32;
            data[2 * i + 1] = (16 * i + 1) as f32;
            labels[i] = (256 * i) as f32;
        }
        ds
    }

    fn floats(bytes: &[u8]) -> Vec<f32> {
        bytes.chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect()
    }

    #[test]
    fn mt19937_matches_the_standard() {
        // The C++ standard requires the 10000th output of a default mt19937 to be 4123659995.
        let mut rng = Mt19937::default();
        let mut last = 0;
        for _ in 0..10000 {
            last = rng.next_u32();
        }
        assert_eq!(last, 4_123_659_995);
    }

    #[test]
    fn shuffles_match_libstdcxx() {
        // Reference values: std::shuffle over std::iota vectors with a default std::mt19937
        // (g++ 12, libstdc++), one engine for all three shuffles in this order.
        let mut rng = Mt19937::default();
        let mut a: Vec<i64> = (0..6).collect();
        rng.shuffle(&mut a);
        let mut b: Vec<i64> = (0..7).collect();
        rng.shuffle(&mut b);
        let mut c: Vec<i64> = (0..70000).collect();
        rng.shuffle(&mut c);
        assert_eq!(a, SHUFFLED_6);
        assert_eq!(b, SHUFFLED_7);
        assert_eq!(&c[..8], &SHUFFLED_70000_HEAD);
        let mut sorted = c.clone();
        sorted.sort_unstable();
        assert!(sorted.iter().copied().eq(0..70000));
    }

    const SHUFFLED_6: [i64; 6] = [2, 3, 0, 5, 4, 1];
    const SHUFFLED_7: [i64; 7] = [3, 1, 4, 0, 2, 6, 5];
    const SHUFFLED_70000_HEAD: [i64; 8] = [49854, 32999, 32931, 42744, 57901, 23386, 68115, 62922];

    #[test]
    fn batches_follow_the_permutation() {
        for shard in 1..=6 {
            let mut ds = dataset(shard);
            assert_eq!(ds.ndata(), 6);
            assert_eq!(ds.permutation().len(), (6 / shard) as usize);
            let mut rng = Mt19937::default();
            ds.shuffle(&mut rng, -1);
            let perm = ds.permutation().to_vec();
            let mut sorted = perm.clone();
            sorted.sort_unstable();
            assert!(sorted.iter().copied().eq(0..6 / shard));

            // Batches of one shard each, into host memory.
            let nbatches = 6 / shard;
            for ibatch in 0..nbatches {
                let mut data = vec![0u8; shard as usize * 8];
                let mut labels = vec![0u8; ds.labels_bytes_for(data.len())];
                ds.get_batch_host(&mut data, Some(&mut labels), ibatch);
                let data = floats(&data);
                let labels = floats(&labels);
                for k in 0..shard as usize {
                    let idata = perm[ibatch as usize] as usize * shard as usize + k;
                    assert_eq!(data[2 * k], (16 * idata) as f32);
                    assert_eq!(data[2 * k + 1], (16 * idata + 1) as f32);
                    assert_eq!(labels[k], (256 * idata) as f32);
                }
            }
        }
    }

    #[test]
    fn batches_into_tensors() {
        let ds = dataset(1);
        let mut ctx = Context::new(InitParams { mem_size: 1 << 12, mem_buffer: std::ptr::null_mut(), no_alloc: true });
        let data = ctx.new_tensor(Type::F32, &[2, 3]);
        let labels = ctx.new_tensor(Type::F32, &[1, 3]);
        let buf = tallocr::alloc_ctx_tensors(&ctx, host_buffer::cpu_buffer_type()).unwrap();
        ds.get_batch(data, Some(labels), 1);
        let mut out = vec![0u8; 24];
        buffer::tensor_get(data, &mut out, 0);
        assert_eq!(floats(&out), [48.0, 49.0, 64.0, 65.0, 80.0, 81.0]);
        let mut out = vec![0u8; 12];
        buffer::tensor_get(labels, &mut out, 0);
        assert_eq!(floats(&out), [768.0, 1024.0, 1280.0]);
        buf.free();
    }

    #[test]
    fn partial_shuffles_leave_the_rest_in_place() {
        let mut ds = dataset(1);
        let mut rng = Mt19937::new(42);
        for _ in 0..3 {
            ds.shuffle(&mut rng, 4);
            assert_eq!(&ds.permutation()[4..], &[4, 5]);
        }
        // std::shuffle of the first four, three times, with std::mt19937(42).
        assert_eq!(ds.permutation(), &[2, 1, 0, 3, 4, 5]);
    }

    #[test]
    fn unlabelled_datasets() {
        let ds = Dataset::new(Type::F32, Type::F32, 1, 0, 6, 1);
        assert!(ds.labels().is_none());
        let mut data = vec![0u8; 8];
        ds.get_batch_host(&mut data, None, 2);
        assert_eq!(ds.labels_bytes_for(8), 0);
    }
}
