//! The integration test suites, one module per area.

mod scripted_server;
