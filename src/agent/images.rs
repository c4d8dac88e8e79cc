//! Images the user attaches to a message (`/image PATH`, a pasted image path).
//!
//! Owns: reading each image when its message is delivered, checking what it is by its
//! first bytes (PNG, JPEG, GIF, WebP) and its size, refusing it when the model is known
//! not to take images, and adding it to the message as an image block, recorded in
//! the session. Does not own: how each wire sends an image (`provider/`).
//! Invariant: only a file that is one of the four formats by its content, at most
//! [`MAX_IMAGE_BYTES`], joins the conversation; anything else is refused with a reason
//! the user sees, and the model is told which image it did not get. The paths are the
//! user's own choice, so they may lie outside the workspace; nothing the model or the
//! repository says ever becomes one.

use base64::Engine as _;

use crate::provider::Block;
use crate::session::Record;

use super::protocol::{Event, MessageId};
use super::session::Agent;

/// The largest image sent: the Messages API's limit for one image (the OpenAI wires
/// take more).
pub(super) const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

impl Agent {
    /// Adds the images at `paths` to the message `id` just delivered.
    pub(super) async fn attach_images(&mut self, id: MessageId, paths: &[String]) {
        if paths.is_empty() {
            return;
        }
        let mut attached = Vec::new();
        let mut refused = Vec::new();
        for path in paths {
            let name = file_name(path);
            if self.model_info.takes_images == Some(false) {
                refused.push(format!("{name}: this model does not take images"));
                continue;
            }
            let owned = path.clone();
            let read = tokio::task::spawn_blocking(move || read_image(&owned))
                .await
                .unwrap_or_else(|error| Err(format!("reading it stopped: {error}")));
            match read {
                Ok((media_type, data)) => {
                    self.events
                        .record(Record::UserImage {
                            media_type: media_type.to_string(),
                            data: data.clone(),
                        })
                        .await;
                    self.conversation.push_user_block(Block::Image {
                        media_type: media_type.to_string(),
                        data,
                    });
                    attached.push(name);
                }
                Err(reason) => refused.push(format!("{name}: {reason}")),
            }
        }
        if !refused.is_empty() {
            let note = format!(
                "The user attached images that could not be sent to you: {}.",
                refused.join("; ")
            );
            self.add_note(note).await;
        }
        self.events
            .emit(Event::ImagesAttached {
                id,
                attached,
                refused,
            })
            .await;
    }
}

/// The image's media type and its bytes in base64, or why it cannot be sent.
fn read_image(path: &str) -> Result<(&'static str, String), String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|error| format!("cannot open it: {error}"))?;
    let size = file
        .metadata()
        .map_err(|error| format!("cannot read it: {error}"))?
        .len();
    if size > MAX_IMAGE_BYTES {
        return Err(format!(
            "it is {:.1} MiB; images of at most {} MiB are sent",
            size as f64 / 1_048_576.0,
            MAX_IMAGE_BYTES >> 20
        ));
    }
    let mut bytes = Vec::new();
    // The file may grow while it is read: never read past the limit.
    file.take(MAX_IMAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| format!("cannot read it: {error}"))?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(format!("it is larger than {} MiB", MAX_IMAGE_BYTES >> 20));
    }
    let media_type = media_type(&bytes)
        .ok_or("it is not a PNG, JPEG, GIF or WebP image (judged by its content, not its name)")?;
    Ok((
        media_type,
        base64::engine::general_purpose::STANDARD.encode(&bytes),
    ))
}

/// The media type of an image by its signature.
pub(super) fn media_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

fn file_name(path: &str) -> String {
    std::path::Path::new(path).file_name().map_or_else(
        || path.to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_known_by_their_first_bytes() {
        assert_eq!(media_type(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(media_type(&[0xff, 0xd8, 0xff, 0xe0]), Some("image/jpeg"));
        assert_eq!(media_type(b"GIF89a..."), Some("image/gif"));
        assert_eq!(media_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(media_type(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(media_type(b"-----BEGIN OPENSSH PRIVATE KEY-----"), None);
        assert_eq!(media_type(b""), None);
    }

    #[test]
    fn a_file_named_like_an_image_is_judged_by_its_content() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("shot.png");
        std::fs::write(&fake, "not an image").unwrap();
        let error = read_image(&fake.to_string_lossy()).unwrap_err();
        assert!(error.contains("not a PNG"), "{error}");
        let big = dir.path().join("big.png");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(MAX_IMAGE_BYTES + 1).unwrap();
        let error = read_image(&big.to_string_lossy()).unwrap_err();
        assert!(error.contains("at most 5 MiB"), "{error}");
        let error = read_image(&dir.path().join("missing.png").to_string_lossy()).unwrap_err();
        assert!(error.contains("cannot open"), "{error}");
    }
}
