//! Deterministic random changes for the diff tests.
//!
//! Owns: a tiny xorshift generator and the shape of a random change.
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

/// A random proposed change: repeated lines, LF or CRLF (or both), with or without a
/// final newline on either side, sometimes empty, sometimes a new file.
pub(crate) fn random_change(rng: &mut Rng) -> (Option<String>, String) {
    let pool = 2 + rng.below(8);
    let before = random_lines(rng, 40, pool);
    let after = edited(rng, &before, pool);
    let crlf_before = rng.one_in(3);
    // Now and then the change also converts line endings.
    let crlf_after = if rng.one_in(8) {
        !crlf_before
    } else {
        crlf_before
    };
    let before_text = join(&before, crlf_before, !rng.one_in(4));
    let after_text = join(&after, crlf_after, !rng.one_in(4));
    let before = if rng.one_in(10) {
        None
    } else {
        Some(before_text)
    };
    (before, after_text)
}

fn join(lines: &[String], crlf: bool, final_newline: bool) -> String {
    let ending = if crlf { "\r\n" } else { "\n" };
    let mut text = lines.join(ending);
    if final_newline && !lines.is_empty() {
        text.push_str(ending);
    }
    text
}
