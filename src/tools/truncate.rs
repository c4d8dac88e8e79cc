//! SCAFFOLD: replaced by the tools work.
