//! The integration test suites, one module per area.

mod agent_loop;
mod approval;
mod command_policy;
mod exec_cli;
mod lint_after_write;
mod scripted_server;
mod shell_tool;
mod tui_tmux;
