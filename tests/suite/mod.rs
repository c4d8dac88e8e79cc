//! The integration test suites, one module per area.

mod agent_loop;
mod approval;
mod exec_cli;
mod scripted_server;
