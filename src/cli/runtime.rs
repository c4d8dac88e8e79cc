//! The async runtimes the front ends run on.
//!
//! Owns: building them, and the message when that fails. Does not own: what runs on
//! them, nor on how many (the terminal UI starts two, `super::tui` says why).
//! Invariant: a runtime is built where it is needed and dropped when its work is done;
//! none is shared between front ends or kept in a global.

use anyhow::Context;

/// A runtime with a worker per core, for a front end that runs on one runtime.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// A runtime whose tasks run on one thread: the one that drives it with `block_on`.
pub fn single_thread_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start an async runtime")
}
