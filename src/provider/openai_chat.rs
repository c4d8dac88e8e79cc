//! SCAFFOLD: replaced by the provider work.
use super::{Endpoint, EventStream, ModelClient, ModelRequest, ProviderError};

pub struct OpenAiChatClient {
    endpoint: Endpoint,
}

impl OpenAiChatClient {
    pub fn new(_http: reqwest::Client, endpoint: Endpoint) -> Self {
        Self { endpoint }
    }
}

#[async_trait::async_trait]
impl ModelClient for OpenAiChatClient {
    fn model(&self) -> &str {
        &self.endpoint.model
    }

    async fn stream(&self, _request: &ModelRequest) -> Result<EventStream, ProviderError> {
        Err(ProviderError::Setup("scaffold".into()))
    }
}
