//! Helpers shared by the integration test suites: the scripted model server and its
//! scripts.
// Each suite uses only some helpers, so unused ones must not fail the build.
#![allow(dead_code)]

pub mod framing;
pub mod harness;
pub mod quirks;
/// Generates one test per wire format for each named `async fn name(wire: Wire)`:
/// `name::anthropic` and `name::openai`.
macro_rules! for_each_wire {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            async fn anthropic() {
                super::$name(duet::provider::Wire::Anthropic).await;
            }

            #[tokio::test]
            async fn openai() {
                super::$name(duet::provider::Wire::OpenAiChat).await;
            }

            #[tokio::test]
            async fn openai_responses() {
                super::$name(duet::provider::Wire::OpenAiResponses).await;
            }
        }
    )*};
}

pub mod script;
pub mod scripted_server;
