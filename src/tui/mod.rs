//! The interactive front end: ratatui views beside the agent, joined only by the
//! agent's command and event channels.
//!
//! Owns: the terminal (raw mode, alternate screen, restore on exit or panic), the
//! event loop (keys, agent events, frame ticks), and the views.
//! Does not own: anything the agent does; it sends [`crate::agent::Command`]s and
//! renders [`crate::agent::Event`]s.
//! Invariant: the loop never awaits the network or a tool; drawing happens only when
//! something on screen changed, at most once per frame interval.

pub mod action;
mod app;
pub mod composer;
mod event_loop;
pub mod file_list;
pub mod frame;
pub mod help;
mod highlight;
mod input;
pub mod keymap;
mod notify;
pub mod painter;
pub mod pending;
pub mod review;
pub mod setup;
pub mod slash;
pub mod status;
pub mod terminal;
mod terminal_keys;
pub mod theme;
pub mod transcript;

pub use event_loop::{TuiExit, TuiOptions, run};
