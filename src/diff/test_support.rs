//! Deterministic random changes for the diff tests.
//!
//! Owns: a tiny xorshift generator and random line edits (the property tests in
//! `apply` draw whole changes with proptest).
//! Does not own: any assertion.
//! Invariant: the same seed gives the same cases on every platform and build.

/// xorshift64: enough randomness to vary test cases, fully reproducible.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        // xorshift never leaves zero.
        Rng(seed.max(1))
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }

    /// True about one time in `n`.
    pub(crate) fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
}

/// Up to `max_len` lines drawn from a pool of `pool` texts, so lines repeat and a diff
/// has many equally short alignments to choose from.
pub(crate) fn random_lines(rng: &mut Rng, max_len: usize, pool: usize) -> Vec<String> {
    let len = rng.below(max_len + 1);
    (0..len).map(|_| format!("l{}", rng.below(pool))).collect()
}

/// `lines` after a few random removals, replacements and insertions.
pub(crate) fn edited(rng: &mut Rng, lines: &[String], pool: usize) -> Vec<String> {
    let mut out = lines.to_vec();
    for _ in 0..rng.below(7) {
        let at = rng.below(out.len() + 1);
        match rng.below(3) {
            0 if at < out.len() => {
                out.remove(at);
            }
            1 if at < out.len() => out[at] = format!("new{}", rng.below(pool)),
            _ => {
                for _ in 0..=rng.below(3) {
                    out.insert(at, format!("l{}", rng.below(pool)));
                }
            }
        }
    }
    out
}
