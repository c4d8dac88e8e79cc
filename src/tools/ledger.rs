//! SCAFFOLD: replaced by the tools work.
#[derive(Debug, Default)]
pub struct ReadLedger {}
