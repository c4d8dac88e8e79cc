//! Turning an MCP tool result into the text the model receives.
//!
//! Text is passed on as it is; what the model cannot read here (images, audio, binary
//! resources) becomes a one-line note saying what it was. The result is data: nothing
//! in it is interpreted as an instruction to duet.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// The text of a result, and whether the server flagged it as an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappedResult {
    pub text: String,
    pub is_error: bool,
}

/// Maps every content block in order; structured content is used only when there is
/// no content at all (servers that send both send the same thing twice).
pub fn map_result(result: &CallToolResult) -> MappedResult {
    let mut parts: Vec<String> = result.content.iter().map(block_text).collect();
    if parts.is_empty() {
        parts.extend(result.structured_content.iter().map(ToString::to_string));
    }
    let text = if parts.is_empty() {
        "(the tool returned no content)".to_string()
    } else {
        parts.join("\n")
    };
    MappedResult {
        text,
        is_error: result.is_error.unwrap_or(false),
    }
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => binary_note("image", &image.mime_type, &image.data),
        ContentBlock::Audio(audio) => binary_note("audio", &audio.mime_type, &audio.data),
        ContentBlock::Resource(embedded) => resource_text(&embedded.resource),
        ContentBlock::ResourceLink(link) => {
            format!("[resource link: {} ({})]", link.name, link.uri)
        }
        // A content kind newer than this client: say so rather than drop it silently.
        _ => "[content of a kind duet cannot show]".to_string(),
    }
}

fn resource_text(resource: &ResourceContents) -> String {
    match resource {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => {
            let mime_type = mime_type.as_deref().unwrap_or("application/octet-stream");
            format!("{} ({uri})", binary_note("resource", mime_type, blob))
        }
        _ => "[a resource of a kind duet cannot show]".to_string(),
    }
}

/// `[image: image/png, 1234 bytes]`; the size is that of the decoded data.
fn binary_note(kind: &str, mime_type: &str, base64: &str) -> String {
    format!("[{kind}: {mime_type}, {} bytes]", decoded_len(base64))
}

/// The length of base64 `data` once decoded, without decoding it.
fn decoded_len(data: &str) -> usize {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3 + (data.len() % 4).saturating_sub(1)).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use rmcp::model::Resource;

    use super::*;

    #[test]
    fn text_passes_through_and_binary_becomes_a_note() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("first"),
            // "hello" in base64: 5 bytes.
            ContentBlock::image("aGVsbG8=", "image/png"),
            ContentBlock::embedded_text("file:///notes.md", "embedded text"),
            ContentBlock::resource(ResourceContents::BlobResourceContents {
                uri: "file:///a.bin".into(),
                mime_type: None,
                blob: "AAECAw==".into(),
                meta: None,
            }),
            ContentBlock::resource_link(Resource::new("file:///big.log", "big.log")),
        ]);
        assert_eq!(
            map_result(&result),
            MappedResult {
                text: "first\n[image: image/png, 5 bytes]\nembedded text\n\
                       [resource: application/octet-stream, 4 bytes] (file:///a.bin)\n\
                       [resource link: big.log (file:///big.log)]"
                    .into(),
                is_error: false,
            }
        );
    }

    #[test]
    fn an_error_flag_makes_an_error_result() {
        let mapped = map_result(&CallToolResult::error(vec![ContentBlock::text(
            "no such issue",
        )]));
        assert_eq!(mapped.text, "no such issue");
        assert!(mapped.is_error);
    }

    #[test]
    fn structured_content_stands_in_for_missing_content() {
        let mut result = CallToolResult::success(Vec::new());
        result.structured_content = Some(serde_json::json!({"sum": 3}));
        assert_eq!(map_result(&result).text, r#"{"sum":3}"#);
        assert_eq!(
            map_result(&CallToolResult::success(Vec::new())).text,
            "(the tool returned no content)"
        );
    }

    #[test]
    fn decoded_lengths_of_base64() {
        for (data, len) in [
            ("", 0),
            ("YQ==", 1),
            ("YWI=", 2),
            ("YWJj", 3),
            ("aGVsbG8", 5),
        ] {
            assert_eq!(decoded_len(data), len, "{data}");
        }
    }
}
