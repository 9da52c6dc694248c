//! `struct ggml_opt_result`: what evaluations add up over an epoch — the loss of every
//! physical batch, the predictions, the number of correct ones — and the statistics reported
//! from them (mean loss and accuracy, each with the uncertainty of its mean).

/// Loss, predictions and accuracy accumulated over batches.
#[derive(Clone, Debug)]
pub struct OptResult {
    /// Data points evaluated.
    ndata: i64,
    /// One loss value per physical batch.
    loss: Vec<f32>,
    /// The predictions, in evaluation order.
    pred: Vec<i32>,
    /// Correct predictions; negative once a batch had no way of counting them.
    ncorrect: i64,
    /// The context's gradient accumulation period (set by the first evaluation).
    opt_period: i64,
    /// Whether the loss is a mean over data points (rather than a sum).
    loss_per_datapoint: bool,
}

impl Default for OptResult {
    fn default() -> Self {
        OptResult {
            ndata: 0,
            loss: Vec::new(),
            pred: Vec::new(),
            ncorrect: 0,
            opt_period: -1,
            loss_per_datapoint: false,
        }
    }
}

impl OptResult {
    pub fn new() -> OptResult {
        OptResult::default()
    }

    /// Empties the result (`ggml_opt_result_reset`); the loss convention stays until the next
    /// evaluation sets it again.
    pub fn reset(&mut self) {
        self.ndata = 0;
        self.loss.clear();
        self.pred.clear();
        self.ncorrect = 0;
    }

    pub fn ndata(&self) -> i64 {
        self.ndata
    }

    /// The predictions made so far (one per data point when the loss makes predictions).
    pub fn pred(&self) -> &[i32] {
        &self.pred
    }

    /// The mean loss per data point (or the summed loss, for a sum loss) and the uncertainty
    /// of that value, estimated from the spread of the per-batch losses. With no batch the
    /// loss is 0 and its uncertainty NaN; with one batch the uncertainty is NaN.
    pub fn loss(&self) -> (f64, f64) {
        let nbatches = self.loss.len();
        if nbatches == 0 {
            return (0.0, f64::NAN);
        }
        // A per-data-point loss was divided by the accumulation period in each physical
        // batch; undo that so every batch counts as a whole one.
        let scale = if self.loss_per_datapoint { self.opt_period as f32 } else { 1.0 };
        let (sum, sum_squared) = self.loss.iter().fold((0.0f64, 0.0f64), |(s, s2), &l| {
            let l = f64::from(l * scale);
            (s + l, s2 + l * l)
        });
        let n = nbatches as f64;
        let mean = sum / n;
        let loss = if self.loss_per_datapoint { mean } else { sum };
        if nbatches < 2 {
            return (loss, f64::NAN);
        }
        // Variance of the batch losses without Bessel's correction.
        let var = sum_squared / n - mean * mean;
        let unc = if self.loss_per_datapoint { (var / (n - 1.0)).sqrt() } else { (var * n / (n - 1.0)).sqrt() };
        (loss, unc)
    }

    /// The fraction of correct predictions and its binomial uncertainty; NaN when the loss
    /// does not count correct predictions (and the uncertainty also for fewer than two points).
    pub fn accuracy(&self) -> (f64, f64) {
        if self.ncorrect < 0 {
            return (f64::NAN, f64::NAN);
        }
        let n = self.ndata as f64;
        let accuracy = self.ncorrect as f64 / n;
        let unc = if self.ndata >= 2 { (accuracy * (1.0 - accuracy) / (n - 1.0)).sqrt() } else { f64::NAN };
        (accuracy, unc)
    }

    /// Records the conventions of the context that evaluates into this result: set by the
    /// first batch, and every later batch must agree.
    pub(crate) fn check_conventions(&mut self, loss_per_datapoint: bool, opt_period: i64) {
        if self.ndata == 0 {
            self.loss_per_datapoint = loss_per_datapoint;
            self.opt_period = opt_period;
        } else {
            crate::ggml_assert!(
                self.loss_per_datapoint == loss_per_datapoint,
                "results of contexts with different loss types cannot be mixed"
            );
            crate::ggml_assert!(
                self.opt_period == opt_period,
                "results of contexts with different accumulation periods cannot be mixed"
            );
        }
    }

    /// Adds one physical batch of `ndata` points with its loss and (if made) predictions.
    pub(crate) fn add_batch(&mut self, ndata: i64, loss: f32, pred: Option<&[i32]>) {
        crate::ggml_assert!(
            self.ndata == ndata * self.loss.len() as i64,
            "varying batch size not supported ({} points after {} batches, then {})",
            self.ndata,
            self.loss.len(),
            ndata
        );
        self.ndata += ndata;
        self.loss.push(loss);
        if let Some(pred) = pred {
            self.pred.extend_from_slice(pred);
        }
    }

    /// Adds the correct predictions of a batch; `None` (the batch could not count them) makes
    /// the accuracy unknown from then on.
    pub(crate) fn add_ncorrect(&mut self, ncorrect: Option<i64>) {
        match ncorrect {
            Some(n) if self.ncorrect >= 0 => self.ncorrect += n,
            _ => self.ncorrect = -1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn empty_result() {
        let r = OptResult::new();
        assert_eq!(r.ndata(), 0);
        let (loss, unc) = r.loss();
        assert_eq!(loss, 0.0);
        assert!(unc.is_nan());
        let (acc, unc) = r.accuracy();
        assert!(acc.is_nan() && unc.is_nan());
    }

    #[test]
    fn summed_loss_and_its_uncertainty() {
        let mut r = OptResult::new();
        r.check_conventions(false, 1);
        for l in [1.0, 2.0, 3.0, 6.0] {
            r.add_batch(2, l, None);
            r.add_ncorrect(Some(1));
        }
        assert_eq!(r.ndata(), 8);
        let (loss, unc) = r.loss();
        assert!(close(loss, 12.0));
        // mean 3, population variance 3.5, times n/(n-1) = 4/3, sqrt.
        assert!(close(unc, (3.5f64 * 4.0 / 3.0).sqrt()));
        let (acc, unc) = r.accuracy();
        assert!(close(acc, 0.5));
        assert!(close(unc, (0.25f64 / 7.0).sqrt()));
    }

    #[test]
    fn per_datapoint_loss_undoes_the_accumulation_scaling() {
        let mut r = OptResult::new();
        r.check_conventions(true, 2);
        r.add_batch(3, 0.5, Some(&[1, 2, 3]));
        assert!(r.loss().1.is_nan());
        r.add_batch(3, 1.5, Some(&[4, 5, 6]));
        let (loss, unc) = r.loss();
        // Batches count as 1.0 and 3.0: mean 2, population variance 1, /(n-1).
        assert!(close(loss, 2.0));
        assert!(close(unc, 1.0));
        assert_eq!(r.pred(), &[1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn unknown_accuracy_stays_unknown() {
        let mut r = OptResult::new();
        r.add_batch(1, 0.0, None);
        r.add_ncorrect(Some(1));
        r.add_ncorrect(None);
        r.add_ncorrect(Some(1));
        assert!(r.accuracy().0.is_nan());
        r.reset();
        assert_eq!((r.ndata(), r.pred().len()), (0, 0));
        r.add_batch(1, 0.0, None);
        r.add_ncorrect(Some(1));
        assert_eq!(r.accuracy().0, 1.0);
    }
}
