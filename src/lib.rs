//! duet: a terminal pair-programming agent.
//!
//! The dependency direction is the architecture: front ends ([`exec`], [`tui`],
//! [`eval`], which runs `duet exec` as child processes) →
//! [`agent`] → the leaves ([`provider`], [`tools`], [`mcp`], [`shell`], [`lint`], [`policy`],
//! [`diff`], [`git`], [`config`], [`session`], [`custom_commands`], [`instructions`]). No leaf
//! imports `agent` or a front end.
//! [`pathglob`], [`process_group`], [`terminal_text`], [`json_string`],
//! [`value_name`] and [`mention`] (the `@path` token grammar the composer writes and the
//! agent expands) are small utilities the leaves and front ends share, and [`beneath`]
//! is the one way duet itself opens, writes and removes files in the workspace;
//! `fuzzing` holds the entry points of the fuzz targets under `fuzz/`.

pub mod agent;
pub mod beneath;
pub mod config;
pub mod custom_commands;
pub mod diff;
pub mod eval;
pub mod exec;
#[doc(hidden)]
pub mod fuzzing;
pub mod git;
pub mod hooks;
pub mod instructions;
pub mod json_string;
pub mod lint;
pub mod mcp;
pub mod mention;
pub mod parse_deadline;
pub mod pathglob;
pub mod policy;
pub mod process_group;
pub mod provider;
pub mod session;
pub mod shell;
pub mod terminal_text;
pub mod tools;
pub mod tui;
pub mod value_name;
