//! SCAFFOLD: replaced by the provider work.
use super::ProviderError;

pub(crate) fn client() -> Result<reqwest::Client, ProviderError> {
    Err(ProviderError::Setup("scaffold".into()))
}
