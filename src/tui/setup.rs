//! The setup view `duet` opens when no model is configured: the local model servers
//! the probes find, listed as they answer, and how to configure a hosted provider.
//! The user picks a local model and confirms; the caller saves it and starts the
//! session.
//!
//! Owns: the view's state, keys and drawing, and its small event loop.
//! Does not own: probing ([`crate::config::probe`]), saving the pick
//! ([`crate::config::init::save_choice`]) or the session that follows.
//! Invariant: the first frame is drawn before any probe result is awaited, so a server
//! that never answers cannot delay it.

use std::io;
use std::path::PathBuf;

use crossterm::event::{
    Event as TermEvent, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers,
};
use futures::{Stream, StreamExt};
use ratatui::Frame;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use tokio::sync::mpsc;

use crate::config::init::LocalChoice;
use crate::config::probe::{self, FoundServer, LocalServer};

use super::terminal::{self, Screen};
use super::theme::Theme;

/// One local model the user can pick.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Pick {
    server: &'static str,
    choice: LocalChoice,
}

/// What a key did to the view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetupStep {
    Redraw,
    Nothing,
    Quit,
    /// The user confirmed this model.
    Chosen(LocalChoice),
}

/// The view's state: what was found so far and where the user is.
#[derive(Debug)]
pub struct SetupView {
    config_file: PathBuf,
    /// The servers looked for, for the "nothing found" line.
    looked_for: String,
    picks: Vec<Pick>,
    /// Servers that answered but serve no model.
    idle: Vec<LocalServer>,
    selected: usize,
    probing: bool,
    confirming: bool,
}

impl SetupView {
    pub fn new(config_file: PathBuf, servers: &[LocalServer]) -> Self {
        let looked_for = servers
            .iter()
            .map(|server| format!("{} {}", server.name, server.base_url))
            .collect::<Vec<_>>()
            .join(", ");
        Self {
            config_file,
            looked_for,
            picks: Vec::new(),
            idle: Vec::new(),
            selected: 0,
            probing: true,
            confirming: false,
        }
    }

    /// Whether probes may still report.
    pub fn is_probing(&self) -> bool {
        self.probing
    }

    pub fn on_found(&mut self, found: FoundServer) {
        if found.models.is_empty() {
            self.idle.push(found.server);
            return;
        }
        let server = found.server;
        self.picks
            .extend(found.models.into_iter().map(|model| Pick {
                server: server.name,
                choice: LocalChoice {
                    base_url: server.base_url.clone(),
                    model,
                },
            }));
    }

    pub fn probes_finished(&mut self) {
        self.probing = false;
    }

    pub fn on_key(&mut self, key: KeyEvent) -> SetupStep {
        if key.kind == KeyEventKind::Release {
            return SetupStep::Nothing;
        }
        if self.confirming {
            return match key.code {
                KeyCode::Enter | KeyCode::Char('y') => self
                    .picks
                    .get(self.selected)
                    .map_or(SetupStep::Nothing, |pick| {
                        SetupStep::Chosen(pick.choice.clone())
                    }),
                KeyCode::Esc | KeyCode::Char('n') => {
                    self.confirming = false;
                    SetupStep::Redraw
                }
                _ => SetupStep::Nothing,
            };
        }
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => SetupStep::Quit,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => SetupStep::Quit,
            KeyCode::Up | KeyCode::Char('k') => self.move_selection(-1),
            KeyCode::Down | KeyCode::Char('j') => self.move_selection(1),
            KeyCode::Enter if !self.picks.is_empty() => {
                self.confirming = true;
                SetupStep::Redraw
            }
            _ => SetupStep::Nothing,
        }
    }

    fn move_selection(&mut self, by: isize) -> SetupStep {
        let last = self.picks.len().saturating_sub(1);
        let next = self.selected.saturating_add_signed(by).min(last);
        if next == self.selected {
            return SetupStep::Nothing;
        }
        self.selected = next;
        SetupStep::Redraw
    }

    pub fn render(&self, frame: &mut Frame, theme: &Theme) {
        let paragraph = Paragraph::new(self.lines(theme)).wrap(Wrap { trim: false });
        frame.render_widget(paragraph, frame.area());
    }

    fn lines(&self, theme: &Theme) -> Vec<Line<'static>> {
        let mut lines = vec![
            Line::styled(
                "duet needs a model to talk to, and none is configured.",
                theme.heading,
            ),
            Line::default(),
            Line::styled("Models on this machine", theme.accent),
        ];
        lines.extend(self.pick_lines(theme));
        lines.extend([
            Line::default(),
            Line::styled("Hosted models: set a key and run duet again", theme.accent),
            Line::raw("  Anthropic  export ANTHROPIC_API_KEY=sk-ant-..."),
            Line::raw("  OpenAI     export OPENAI_API_KEY=sk-..."),
            Line::raw(
                "  or set provider, model and base_url in the config file (`duet config init`):",
            ),
            Line::raw(format!("  {}", self.config_file.display())),
            Line::default(),
            self.prompt(theme),
        ]);
        lines
    }

    fn pick_lines(&self, theme: &Theme) -> Vec<Line<'static>> {
        let mut lines: Vec<Line<'static>> = self
            .picks
            .iter()
            .enumerate()
            .map(|(index, pick)| {
                let text = format!(
                    "{} {}  {}  {}",
                    if index == self.selected { '>' } else { ' ' },
                    pick.choice.model,
                    pick.server,
                    pick.choice.base_url
                );
                let style = if index == self.selected {
                    theme.selected
                } else {
                    theme.text
                };
                Line::from(vec![Span::raw("  "), Span::styled(text, style)])
            })
            .collect();
        lines.extend(self.idle.iter().map(|server| {
            Line::styled(
                format!(
                    "    {} at {}, serving no model yet",
                    server.name, server.base_url
                ),
                theme.dim,
            )
        }));
        if self.probing {
            lines.push(Line::styled(
                "  looking for local model servers…",
                theme.dim,
            ));
        } else if self.picks.is_empty() && self.idle.is_empty() {
            lines.push(Line::styled(
                format!("  none found (looked for {})", self.looked_for),
                theme.dim,
            ));
        }
        lines
    }

    fn prompt(&self, theme: &Theme) -> Line<'static> {
        match self.picks.get(self.selected) {
            Some(pick) if self.confirming => Line::styled(
                format!(
                    "Save provider = \"openai\", model = \"{}\", base_url = \"{}\" in {} and start? \
                     (y/n)",
                    pick.choice.model,
                    pick.choice.base_url,
                    self.config_file.display()
                ),
                theme.warning,
            ),
            Some(_) => Line::styled("↑/↓ choose · Enter use this model · q quit", theme.dim),
            None => Line::styled("q quit", theme.dim),
        }
    }
}

/// Shows the setup view until the user confirms a local model (returned) or quits
/// (`None`). Probes `servers` meanwhile; the view takes the whole screen.
pub async fn run(
    color: bool,
    config_file: PathBuf,
    servers: Vec<LocalServer>,
) -> io::Result<Option<LocalChoice>> {
    let screen = Screen {
        inline_rows: None,
        mouse: false,
    };
    let (mut term, guard) = terminal::enter(screen)?;
    let mut view = SetupView::new(config_file, &servers);
    let probes = probe::spawn_probes(servers, probe::PROBE_DEADLINE);
    let theme = Theme::new(color);
    let mut draw = |view: &SetupView| term.draw(|frame| view.render(frame, &theme)).map(|_| ());
    let chosen = drive(&mut view, &mut draw, EventStream::new(), probes).await;
    drop(guard);
    chosen
}

/// The view's loop: draw, then wait for a key or a probe result, until the user
/// confirms or quits.
async fn drive(
    view: &mut SetupView,
    draw: &mut dyn FnMut(&SetupView) -> io::Result<()>,
    mut input: impl Stream<Item = io::Result<TermEvent>> + Unpin,
    mut probes: mpsc::Receiver<FoundServer>,
) -> io::Result<Option<LocalChoice>> {
    let mut redraw = true;
    loop {
        if redraw {
            draw(view)?;
        }
        redraw = tokio::select! {
            event = input.next() => match event {
                Some(Ok(TermEvent::Key(key))) => match view.on_key(key) {
                    SetupStep::Redraw => true,
                    SetupStep::Nothing => false,
                    SetupStep::Quit => return Ok(None),
                    SetupStep::Chosen(choice) => return Ok(Some(choice)),
                },
                Some(Ok(TermEvent::Resize(..))) => true,
                Some(Ok(_)) => false,
                Some(Err(error)) => return Err(error),
                None => return Ok(None),
            },
            found = probes.recv(), if view.is_probing() => {
                match found {
                    Some(found) => view.on_found(found),
                    None => view.probes_finished(),
                }
                true
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use pretty_assertions::assert_eq;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::config::probe::test_support::{serve_models, silent_port};

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn config_file() -> PathBuf {
        PathBuf::from("/home/u/.config/duet/config.toml")
    }

    fn ollama_found() -> FoundServer {
        FoundServer {
            server: LocalServer::new("Ollama", "http://127.0.0.1:11434/v1"),
            models: vec!["qwen2.5-coder".into(), "llama3".into()],
        }
    }

    fn screen(view: &SetupView) -> Terminal<TestBackend> {
        let mut terminal = Terminal::new(TestBackend::new(80, 20)).unwrap();
        terminal
            .draw(|frame| view.render(frame, &Theme::new(false)))
            .unwrap();
        terminal
    }

    #[test]
    fn snapshot_with_ollama_found() {
        let mut view = SetupView::new(config_file(), &LocalServer::defaults());
        view.on_found(ollama_found());
        view.probes_finished();
        insta::assert_snapshot!(screen(&view).backend());
    }

    #[test]
    fn snapshot_with_nothing_found() {
        let mut view = SetupView::new(config_file(), &LocalServer::defaults());
        view.probes_finished();
        insta::assert_snapshot!(screen(&view).backend());
    }

    #[test]
    fn a_pick_needs_a_confirmation() {
        let mut view = SetupView::new(config_file(), &LocalServer::defaults());
        assert_eq!(view.on_key(key(KeyCode::Enter)), SetupStep::Nothing);
        view.on_found(ollama_found());
        assert_eq!(view.on_key(key(KeyCode::Down)), SetupStep::Redraw);
        assert_eq!(view.on_key(key(KeyCode::Down)), SetupStep::Nothing);
        assert_eq!(view.on_key(key(KeyCode::Enter)), SetupStep::Redraw);
        let prompt = view.prompt(&Theme::new(false)).to_string();
        assert!(prompt.contains("model = \"llama3\""), "{prompt}");
        assert_eq!(view.on_key(key(KeyCode::Char('n'))), SetupStep::Redraw);
        assert_eq!(view.on_key(key(KeyCode::Enter)), SetupStep::Redraw);
        assert_eq!(
            view.on_key(key(KeyCode::Char('y'))),
            SetupStep::Chosen(LocalChoice {
                base_url: "http://127.0.0.1:11434/v1".into(),
                model: "llama3".into(),
            })
        );
        assert_eq!(view.on_key(key(KeyCode::Esc)), SetupStep::Redraw);
        assert_eq!(view.on_key(key(KeyCode::Char('q'))), SetupStep::Quit);
    }

    /// What the loop did, in order.
    #[derive(Debug, PartialEq)]
    enum Seen {
        Frame { probing: bool, picks: usize },
    }

    #[tokio::test]
    async fn a_silent_server_does_not_delay_the_first_frame() {
        let (_held, silent) = silent_port();
        let ollama = serve_models(&["qwen2.5-coder"]).await;
        let servers = vec![
            LocalServer::new("vLLM", format!("http://{silent}/v1")),
            LocalServer::new("Ollama", ollama.clone()),
        ];
        let mut view = SetupView::new(config_file(), &servers);
        // A long deadline: had the loop waited for the silent server, the first frame
        // would come after all probes finished.
        let probes = probe::spawn_probes(servers, Duration::from_secs(30));
        let (keys, input) = mpsc::unbounded_channel::<io::Result<TermEvent>>();
        let mut seen = Vec::new();
        let mut draw = |view: &SetupView| {
            seen.push(Seen::Frame {
                probing: view.is_probing(),
                picks: view.picks.len(),
            });
            // The user picks as soon as the answering server is listed.
            if !view.picks.is_empty() {
                let _ = keys.send(Ok(TermEvent::Key(key(KeyCode::Enter))));
                let _ = keys.send(Ok(TermEvent::Key(key(KeyCode::Char('y')))));
            }
            Ok(())
        };
        let input = tokio_stream_of(input);
        let chosen = drive(&mut view, &mut draw, input, probes).await.unwrap();
        assert_eq!(
            chosen,
            Some(LocalChoice {
                base_url: ollama,
                model: "qwen2.5-coder".into()
            })
        );
        assert_eq!(
            seen.first(),
            Some(&Seen::Frame {
                probing: true,
                picks: 0
            })
        );
        assert_eq!(
            seen.last(),
            Some(&Seen::Frame {
                probing: true,
                picks: 1
            })
        );
    }

    fn tokio_stream_of<T>(
        mut receiver: mpsc::UnboundedReceiver<T>,
    ) -> impl Stream<Item = T> + Unpin {
        Box::pin(futures::stream::poll_fn(move |cx| receiver.poll_recv(cx)))
    }
}
