//! duet: a terminal pair-programming agent.
//!
//! The dependency direction is the architecture: front ends (`exec`, later `tui`) →
//! [`agent`] → the leaves ([`provider`], [`tools`], [`policy`], [`git`], [`config`],
//! [`diff`]). No leaf imports `agent` or a front end.

pub mod policy;
pub mod provider;
pub mod tools;
