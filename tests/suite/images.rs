//! Images the user attaches reach the model as image blocks on every wire, in the form
//! each API documents; a file that is not an image by its content, or a model known
//! not to take images, gets a refusal the user sees and the model is told of.

use base64::Engine as _;
use duet::agent::Event;
use duet::config::ModelInfo;
use duet::policy::ApprovalMode;
use duet::provider::Wire;
use serde_json::Value;

use crate::common::harness::{TestAgent, TestRepo, all_text};
use crate::common::script::Script;
use crate::common::scripted_server::ScriptedServer;

/// A 1x1 transparent PNG.
pub(super) const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

fn server_script() -> Script {
    Script::from_toml("[[turn]]\nblocks = [{ text = \"A dot.\" }]\n").unwrap()
}

/// The image parts of the request's user messages, as `(media type, base64 data)`.
pub(super) fn images_sent(wire: Wire, body: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let items = match wire {
        Wire::OpenAiResponses => body["input"].as_array(),
        _ => body["messages"].as_array(),
    };
    for message in items.into_iter().flatten() {
        for part in message["content"].as_array().into_iter().flatten() {
            let data_url = match (wire, part["type"].as_str()) {
                (Wire::Anthropic, Some("image")) => {
                    found.push((
                        part["source"]["media_type"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        part["source"]["data"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                    ));
                    continue;
                }
                (Wire::OpenAiChat, Some("image_url")) => part["image_url"]["url"].as_str(),
                (Wire::OpenAiResponses, Some("input_image")) => part["image_url"].as_str(),
                _ => None,
            };
            if let Some((head, data)) = data_url.and_then(|url| url.split_once(";base64,")) {
                let media_type = head.trim_start_matches("data:").to_string();
                found.push((media_type, data.to_string()));
            }
        }
    }
    found
}

for_each_wire!(an_attached_image_reaches_the_model_as_an_image_block);

async fn an_attached_image_reaches_the_model_as_an_image_block(wire: Wire) {
    let server = ScriptedServer::start(server_script()).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    // A screenshot outside the workspace, as the user's own choice.
    let shots = tempfile::tempdir().unwrap();
    let shot = shots.path().join("shot.png");
    std::fs::write(&shot, PNG).unwrap();
    let fake = shots.path().join("notes.png");
    std::fs::write(&fake, "-----BEGIN OPENSSH PRIVATE KEY-----\n").unwrap();
    let mut agent = TestAgent::start(&server, wire, repo.path(), ApprovalMode::Ask);
    agent.send_with_images("what is in this picture?", &[&shot, &fake]);
    agent.turn_end().await;
    server.assert_no_violations();

    let request = &server.requests()[0];
    let expected = base64::engine::general_purpose::STANDARD.encode(PNG);
    assert_eq!(
        images_sent(wire, &request.body),
        [("image/png".to_string(), expected)]
    );
    let sent = all_text(request);
    assert!(sent.contains("what is in this picture?"), "{sent}");
    assert!(
        sent.contains("notes.png: it is not a PNG"),
        "the model is told: {sent}"
    );
    assert!(!sent.contains("OPENSSH"), "{sent}");
    agent.position("the attachment", |event| {
        matches!(event, Event::ImagesAttached { attached, refused, .. }
            if attached == &["shot.png".to_string()] && refused.len() == 1)
    });
}

#[tokio::test]
async fn a_model_known_not_to_take_images_gets_none() {
    let server = ScriptedServer::start(server_script()).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let shots = tempfile::tempdir().unwrap();
    let shot = shots.path().join("shot.png");
    std::fs::write(&shot, PNG).unwrap();
    let mut agent = TestAgent::start_with(
        &server,
        Wire::OpenAiChat,
        repo.path(),
        ApprovalMode::Ask,
        |setup| {
            setup.model_info = ModelInfo {
                takes_images: Some(false),
                ..ModelInfo::default()
            };
        },
    );
    agent.send_with_images("look", &[&shot]);
    agent.turn_end().await;
    server.assert_no_violations();
    let request = &server.requests()[0];
    assert!(images_sent(Wire::OpenAiChat, &request.body).is_empty());
    let sent = all_text(request);
    assert!(
        sent.contains("shot.png: this model does not take images"),
        "{sent}"
    );
}
