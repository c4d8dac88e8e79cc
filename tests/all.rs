//! The integration tests, in one binary so they share one build and one set of helpers.

// `cfg(test)` always holds in this crate; saying so marks these modules as test code for
// clippy, so their helpers may use unwrap/expect like the tests do (see clippy.toml).
#[cfg(test)]
#[macro_use]
mod common;
#[cfg(test)]
mod suite;
