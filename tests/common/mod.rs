//! Helpers shared by the integration test suites: the scripted model server and its
//! scripts.
// Each suite uses only some helpers, so unused ones must not fail the build.
#![allow(dead_code)]

pub mod harness;
pub mod script;
pub mod scripted_server;
