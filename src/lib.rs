//! duet: a terminal pair-programming agent.
//!
//! The dependency direction is the architecture: front ends ([`exec`], [`tui`]) →
//! [`agent`] → the leaves ([`provider`], [`tools`], [`mcp`], [`shell`], [`lint`], [`policy`],
//! [`diff`], [`git`], [`config`], [`session`]). No leaf imports `agent` or a front end.
//! [`pathglob`] is a small utility the leaves share.

pub mod agent;
pub mod config;
pub mod diff;
pub mod exec;
pub mod git;
pub mod lint;
pub mod mcp;
pub mod pathglob;
pub mod policy;
pub mod provider;
pub mod session;
pub mod shell;
pub mod tools;
pub mod tui;
