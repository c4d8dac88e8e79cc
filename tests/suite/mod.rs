//! The integration test suites, one module per area.

mod agent_loop;
mod approval;
mod command_policy;
mod compaction;
mod containment;
mod containment_files;
mod containment_policy;
mod eval;
mod exec_cli;
mod exec_done;
mod explore;
mod faults;
mod first_run;
mod images;
mod lint_after_write;
mod loop_control;
mod mcp;
mod mentions;
mod real_servers;
mod sandbox;
mod scripted_server;
mod sessions;
mod shell_tool;
mod tui_tmux;
mod undo;
mod user_command;
