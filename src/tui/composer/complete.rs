//! The list offered while an `@` mention is typed (the workspace's files) or a command
//! name after a leading `/` (the built-in and custom slash commands): fuzzy matching,
//! the choice, and the popup above the input.
//!
//! Owns: matching the typed query against the [`Choices`], the selected row, and
//! drawing the popup. Does not own: the token grammar ([`crate::mention`]), listing the
//! files (`tui::file_list`) or the commands (the app), or the text (the composer
//! replaces the query with the chosen path or name).
//! Invariant: a keystroke costs one quick pass (a subsequence test and a rough score,
//! bytewise) over the paths the shorter query matched (a fuzzy match of the longer one
//! is a match of the shorter; the whole list when the query changed otherwise or a new
//! list came), and the matcher's exact scoring of the [`RESCORED`] best of them only:
//! at the 50,000-file cap that is a few milliseconds, not the matcher's fifty. At most
//! [`MAX_SHOWN`] rows are drawn, and nothing outside the given area.

use std::sync::Arc;

use fuzzy_matcher::FuzzyMatcher;
use fuzzy_matcher::skim::SkimMatcherV2;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Widget};
use unicode_width::UnicodeWidthChar;

use super::wrap::text_width;
use crate::tui::file_list::FileList;
use crate::tui::theme::Theme;

/// Matches shown at most: the best ones.
pub(crate) const MAX_SHOWN: usize = 8;
/// How many of the quick pass's best the matcher scores exactly: enough that its best
/// eight are among them, whatever the rough score missed.
const RESCORED: usize = 1000;
/// The popup is at least this wide, so a short path does not make a sliver of it.
const MIN_WIDTH: usize = 30;
/// Cells between a command and its note.
const NOTE_GAP: usize = 2;

/// What a list offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Subject {
    /// The workspace's files, after `@`.
    Files,
    /// Slash commands, after a `/` that starts the message.
    Commands,
}

/// What a list chooses from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Choices {
    /// What is matched and inserted: a path, or a command's name without its slash.
    pub(crate) items: Vec<String>,
    /// Shown dimmed after the item of the same index (a command's arguments and what
    /// it does); empty for files.
    pub(crate) notes: Vec<String>,
    /// The items are the first of more (a walk stopped at its cap).
    pub(crate) truncated: bool,
}

impl From<FileList> for Choices {
    fn from(files: FileList) -> Self {
        Choices {
            items: files.paths,
            notes: Vec::new(),
            truncated: files.truncated,
        }
    }
}

/// The completion of one `@` token or one command name.
#[derive(Clone, Debug)]
pub(crate) struct Completion {
    subject: Subject,
    /// The token's `@` (or the command's `/`): line and byte offset. The list belongs
    /// to that token only.
    anchor: (usize, usize),
    query: String,
    /// The list matched against; `None` until the first walk ends.
    list: Option<Arc<Choices>>,
    /// Indices into the list of every path `query` matches, in list order.
    matching: Vec<usize>,
    /// The best of them, best first.
    shown: Vec<Shown>,
    selected: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Shown {
    index: usize,
    /// Characters (not bytes) of the path the query matched, for highlighting.
    positions: Vec<usize>,
}

impl Completion {
    pub(crate) fn new(subject: Subject, anchor: (usize, usize)) -> Self {
        Completion {
            subject,
            anchor,
            query: String::new(),
            list: None,
            matching: Vec::new(),
            shown: Vec::new(),
            selected: 0,
        }
    }

    pub(crate) fn anchor(&self) -> (usize, usize) {
        self.anchor
    }

    pub(crate) fn subject(&self) -> Subject {
        self.subject
    }

    pub(crate) fn query(&self) -> &str {
        &self.query
    }

    /// Matches `query` against `list` (nothing yet when it is `None`). A new query
    /// selects the best match; a new list for the same query keeps the chosen path.
    pub(crate) fn update(&mut self, query: &str, list: Option<&Arc<Choices>>) {
        let same_list = match (&self.list, list) {
            (Some(old), Some(new)) => Arc::ptr_eq(old, new),
            (None, None) => true,
            _ => false,
        };
        if same_list && query == self.query && self.list.is_some() {
            return;
        }
        let chosen = (query == self.query).then(|| self.chosen().map(str::to_string));
        let Some(list) = list else {
            self.query = query.to_string();
            self.list = None;
            self.matching.clear();
            self.shown.clear();
            self.selected = 0;
            return;
        };
        let items = &list.items;
        let narrowing = same_list && query.starts_with(self.query.as_str());
        let candidates = if narrowing {
            std::mem::take(&mut self.matching)
        } else {
            (0..items.len()).collect()
        };
        // Smart case, as the matcher has it: an ASCII upper-case letter in the query
        // makes the whole match case-sensitive.
        let case_sensitive = query.bytes().any(|b| b.is_ascii_uppercase());
        let mut quick: Vec<(i64, usize)> = candidates
            .into_iter()
            .filter_map(|index| {
                let score = quick_score(items[index].as_bytes(), query.as_bytes(), case_sensitive)?;
                Some((score, index))
            })
            .collect();
        self.matching = quick.iter().map(|&(_, index)| index).collect();
        // Best score first; among equal files the shorter path (nearer the root), then by
        // name; among equal commands, the order they are listed in (built-in ones first).
        let subject = self.subject;
        let order = |a: &(i64, usize), b: &(i64, usize)| {
            let ties = match subject {
                Subject::Files => items[a.1]
                    .len()
                    .cmp(&items[b.1].len())
                    .then_with(|| items[a.1].cmp(&items[b.1])),
                Subject::Commands => a.1.cmp(&b.1),
            };
            b.0.cmp(&a.0).then(ties)
        };
        best(&mut quick, RESCORED, order);
        let matcher = SkimMatcherV2::default();
        let mut scored: Vec<(i64, usize)> = quick
            .into_iter()
            .filter_map(|(_, index)| {
                let score = matcher.fuzzy_match(&items[index], query)?;
                Some((score, index))
            })
            .collect();
        best(&mut scored, MAX_SHOWN, order);
        self.shown = scored
            .into_iter()
            .map(|(_, index)| Shown {
                index,
                positions: matcher
                    .fuzzy_indices(&items[index], query)
                    .map(|(_, positions)| positions)
                    .unwrap_or_default(),
            })
            .collect();
        self.query = query.to_string();
        self.list = Some(Arc::clone(list));
        self.selected = chosen
            .flatten()
            .and_then(|path| {
                self.shown
                    .iter()
                    .position(|shown| items[shown.index] == path)
            })
            .unwrap_or(0);
    }

    /// Whether there is an item to choose (the list came and something matches).
    pub(crate) fn has_choice(&self) -> bool {
        !self.shown.is_empty()
    }

    /// Whether the query is a whole command name already: choosing it would add
    /// nothing, so Enter sends the command rather than completing it.
    pub(crate) fn is_complete(&self) -> bool {
        self.subject == Subject::Commands
            && self
                .chosen()
                .is_some_and(|name| name.eq_ignore_ascii_case(&self.query))
    }

    /// The selected item.
    pub(crate) fn chosen(&self) -> Option<&str> {
        let list = self.list.as_ref()?;
        let shown = self.shown.get(self.selected)?;
        list.items.get(shown.index).map(String::as_str)
    }

    /// Moves the selection, round at the ends; `false` with nothing to choose.
    pub(crate) fn select(&mut self, down: bool) -> bool {
        let count = self.shown.len();
        if count == 0 {
            return false;
        }
        self.selected = if down {
            (self.selected + 1) % count
        } else {
            (self.selected + count - 1) % count
        };
        true
    }

    /// The items shown, best first (for tests and the popup).
    pub(crate) fn shown_items(&self) -> Vec<&str> {
        let Some(list) = &self.list else {
            return Vec::new();
        };
        self.shown
            .iter()
            .filter_map(|shown| list.items.get(shown.index).map(String::as_str))
            .collect()
    }

    /// The note of the shown item at `index` in the list; empty when it has none.
    fn note(&self, index: usize) -> &str {
        self.list
            .as_ref()
            .and_then(|list| list.notes.get(index))
            .map_or("", String::as_str)
    }

    /// The text of a row before its note: the path, or the command with its slash.
    fn row_text(&self, item: &str) -> String {
        match self.subject {
            Subject::Files => item.to_string(),
            Subject::Commands => format!("/{item}"),
        }
    }

    /// Draws the popup at the bottom of `area`, left-aligned, with `footer` (the keys)
    /// in its bottom border when it fits. Returns where it went.
    pub(crate) fn render(
        &self,
        area: Rect,
        buf: &mut Buffer,
        theme: &Theme,
        footer: &str,
    ) -> Option<Rect> {
        if area.height < 3 || area.width < 8 {
            return None;
        }
        let noun = match self.subject {
            Subject::Files => "file",
            Subject::Commands => "command",
        };
        let title = match &self.list {
            Some(list) if list.truncated => {
                format!(" {noun}s (the first {}) ", list.items.len())
            }
            _ => format!(" {noun}s "),
        };
        let message = match &self.list {
            None => Some("listing the workspace's files…".to_string()),
            Some(_) if self.shown.is_empty() => Some(format!("no {noun} matches “{}”", self.query)),
            Some(_) => None,
        };
        let items = self.shown_items();
        let rows = message.as_ref().map_or(items.len(), |_| 1);
        // Notes start in one column, after the widest item shown.
        let item_column = items
            .iter()
            .map(|item| text_width(&self.row_text(item)))
            .max()
            .unwrap_or(0);
        let notes = self
            .shown
            .iter()
            .map(|shown| text_width(self.note(shown.index)))
            .max()
            .unwrap_or(0);
        let rows_width = if notes > 0 {
            item_column + NOTE_GAP + notes
        } else {
            item_column
        };
        let content = message
            .as_deref()
            .map_or(rows_width, text_width)
            // A space each side of the text, a border each side of that.
            + 4;
        let area_width = usize::from(area.width);
        let footer_width = text_width(footer) + 4;
        let footer_fits = footer_width <= area_width;
        let wanted = content
            .max(text_width(&title) + 4)
            .max(if footer_fits { footer_width } else { 0 })
            .max(MIN_WIDTH);
        // Both are capped by the area's own size.
        let width = wanted.min(area_width) as u16;
        let height = (rows as u16 + 2).min(area.height);
        let popup = Rect {
            x: area.x,
            y: area.bottom() - height,
            width,
            height,
        };
        Clear.render(popup, buf);
        let mut block = Block::bordered()
            .border_style(theme.dim)
            .title(Span::styled(title, theme.heading));
        if footer_fits && usize::from(width) >= footer_width {
            block = block.title_bottom(Span::styled(footer.to_string(), theme.dim));
        }
        let inner = block.inner(popup);
        block.render(popup, buf);
        if inner.width < 2 || inner.height == 0 {
            return Some(popup);
        }
        let text_budget = usize::from(inner.width) - 2;
        if let Some(message) = message {
            buf.set_stringn(inner.x + 1, inner.y, message, text_budget, theme.dim);
            return Some(popup);
        }
        // Keep the selection in view when the rows are cut short.
        let visible = usize::from(inner.height);
        let first = (self.selected + 1).saturating_sub(visible);
        for (row, (index, item)) in items
            .iter()
            .enumerate()
            .skip(first)
            .take(visible)
            .enumerate()
        {
            // Both are within the popup, whose size came from the area.
            let y = inner.y + row as u16;
            let selected = index == self.selected;
            let base = if selected { theme.selected } else { theme.text };
            if selected {
                buf.set_style(
                    Rect {
                        y,
                        height: 1,
                        ..inner
                    },
                    base,
                );
            }
            let shown = &self.shown[index];
            let matched = base.patch(theme.accent);
            let line = match self.subject {
                Subject::Files => path_line(item, &shown.positions, text_budget, base, matched),
                Subject::Commands => {
                    // The slash comes before the name the positions are in.
                    let positions: Vec<usize> = shown
                        .positions
                        .iter()
                        .map(|position| position + 1)
                        .collect();
                    let text = self.row_text(item);
                    let mut line = path_line(&text, &positions, text_budget, base, matched);
                    let gap = item_column.saturating_sub(line.width()) + NOTE_GAP;
                    let room = text_budget.saturating_sub(line.width() + gap);
                    let note = self.note(shown.index);
                    if !note.is_empty() && room > 1 {
                        line.spans.push(Span::styled(" ".repeat(gap), base));
                        line.spans
                            .push(Span::styled(clip_end(note, room), base.patch(theme.dim)));
                    }
                    line
                }
            };
            buf.set_line(inner.x + 1, y, &line, inner.width - 1);
        }
        Some(popup)
    }
}

/// Keeps the `count` first of `items` in `order`, sorted.
fn best<T>(items: &mut Vec<T>, count: usize, order: impl Fn(&T, &T) -> std::cmp::Ordering) {
    if items.len() > count {
        items.select_nth_unstable_by(count - 1, &order);
        items.truncate(count);
    }
    items.sort_by(order);
}

/// A rough score of `path` for `query`, or `None` when the query is not a subsequence
/// of it (ASCII letters folded unless `case_sensitive`, as the matcher folds them, so
/// every path the matcher matches passes). Like fzf's first algorithm: the shortest
/// window ending where the query first fits, scored for matches at the start of a word
/// or of the file name, runs of matches, and few gaps.
fn quick_score(path: &[u8], query: &[u8], case_sensitive: bool) -> Option<i64> {
    let Some(&last) = query.last() else {
        return Some(0);
    };
    let same = |a: u8, b: u8| {
        if case_sensitive {
            a == b
        } else {
            a.eq_ignore_ascii_case(&b)
        }
    };
    let mut wanted = query.iter();
    let mut next = wanted.next();
    let mut end = None;
    for (at, &byte) in path.iter().enumerate() {
        if next.is_some_and(|&q| same(byte, q)) {
            next = wanted.next();
            if next.is_none() {
                end = Some(at);
                break;
            }
        }
    }
    let end = end?;
    debug_assert!(same(path[end], last));
    // Back from the end: the latest start of a match ending there.
    let mut wanted = query.iter().rev();
    let mut next = wanted.next();
    let mut start = end;
    for at in (0..=end).rev() {
        if next.is_some_and(|&q| same(path[at], q)) {
            next = wanted.next();
            if next.is_none() {
                start = at;
                break;
            }
        }
    }
    let name_start = path
        .iter()
        .rposition(|&b| b == b'/')
        .map_or(0, |slash| slash + 1);
    let mut score = if start >= name_start { 12 } else { 0 };
    let mut wanted = query.iter().peekable();
    // fzf's weights: a gap costs 3 to open and 1 a byte after; a run of matches keeps
    // the bonus of its first, so `main` after a slash beats `m_a_i_n`.
    let mut in_gap = false;
    let mut run_bonus = None;
    for at in start..=end {
        if wanted.next_if(|&&q| same(path[at], q)).is_none() {
            score -= if in_gap { 1 } else { 3 };
            in_gap = true;
            run_bonus = None;
            continue;
        }
        in_gap = false;
        let before = at.checked_sub(1).map(|b| path[b]);
        let bonus = match before {
            None | Some(b'/') => 10,
            Some(b'_' | b'-' | b'.' | b' ') => 8,
            Some(b) if b.is_ascii_lowercase() && path[at].is_ascii_uppercase() => 7,
            _ => 0,
        };
        let bonus = run_bonus.map_or(bonus, |run: i64| bonus.max(run).max(4));
        run_bonus.get_or_insert(bonus);
        score += 16 + bonus;
    }
    Some(score)
}

/// `text` in at most `budget` cells, cut at the end with `…` when it is longer.
fn clip_end(text: &str, budget: usize) -> String {
    if text_width(text) <= budget {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let width = c.width().unwrap_or(0);
        // Room for the `…`.
        if used + width + 1 > budget {
            break;
        }
        used += width;
        out.push(c);
    }
    out.push('…');
    out
}

/// `path` in at most `budget` cells, the characters at `positions` in `matched`: a path
/// too long loses its start (`…/deep/file.rs`), since the name is what tells paths apart.
fn path_line(
    path: &str,
    positions: &[usize],
    budget: usize,
    base: Style,
    matched: Style,
) -> Line<'static> {
    let chars: Vec<(usize, char)> = path.chars().enumerate().collect();
    let width = |c: char| c.width().unwrap_or(0);
    let total: usize = chars.iter().map(|&(_, c)| width(c)).sum();
    let mut first = 0;
    let mut spans = Vec::new();
    if total > budget {
        let mut kept = 0;
        first = chars.len();
        // Room for the `…`.
        while first > 0 && kept + width(chars[first - 1].1) < budget {
            first -= 1;
            kept += width(chars[first].1);
        }
        spans.push(Span::styled("…", base));
    }
    let mut run = String::new();
    let mut run_matched = false;
    for &(index, c) in &chars[first..] {
        let is_matched = positions.binary_search(&index).is_ok();
        if is_matched != run_matched && !run.is_empty() {
            let style = if run_matched { matched } else { base };
            spans.push(Span::styled(std::mem::take(&mut run), style));
        }
        run_matched = is_matched;
        run.push(c);
    }
    if !run.is_empty() {
        spans.push(Span::styled(run, if run_matched { matched } else { base }));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn list(paths: &[&str]) -> Arc<Choices> {
        Arc::new(Choices {
            items: paths.iter().map(|path| path.to_string()).collect(),
            ..Choices::default()
        })
    }

    fn completion(query: &str, files: &Arc<Choices>) -> Completion {
        let mut completion = Completion::new(Subject::Files, (0, 0));
        completion.update(query, Some(files));
        completion
    }

    const TREE: &[&str] = &[
        "Cargo.toml",
        "README.md",
        "src/main.rs",
        "src/tui/app.rs",
        "src/tui/composer.rs",
        "src/tui/composer/complete.rs",
        "src/mention.rs",
        "tests/suite/tui_tmux.rs",
    ];

    #[test]
    fn the_query_filters_fuzzily_best_first() {
        let files = list(TREE);
        let c = completion("compl", &files);
        assert_eq!(c.shown_items(), ["src/tui/composer/complete.rs"]);
        let c = completion("main", &files);
        assert_eq!(c.shown_items()[0], "src/main.rs");
        let c = completion("tuiapp", &files);
        assert_eq!(c.shown_items(), ["src/tui/app.rs"]);
        let c = completion("xyz", &files);
        assert_eq!(c.shown_items(), Vec::<&str>::new());
        assert!(!c.has_choice());
        assert_eq!(c.chosen(), None);
    }

    #[test]
    fn an_empty_query_offers_the_paths_nearest_the_root_first() {
        let files = list(TREE);
        let c = completion("", &files);
        assert_eq!(
            c.shown_items(),
            [
                "README.md",
                "Cargo.toml",
                "src/main.rs",
                "src/mention.rs",
                "src/tui/app.rs",
                "src/tui/composer.rs",
                "tests/suite/tui_tmux.rs",
                "src/tui/composer/complete.rs"
            ]
        );
    }

    #[test]
    fn case_is_smart() {
        let files = list(&["Makefile", "src/make.rs"]);
        let both = completion("make", &files);
        let mut lower = both.shown_items();
        lower.sort_unstable();
        assert_eq!(lower, ["Makefile", "src/make.rs"]);
        assert_eq!(completion("Make", &files).shown_items(), ["Makefile"]);
    }

    #[test]
    fn at_most_eight_are_shown_of_all_that_match() {
        let paths: Vec<String> = (0..30).map(|n| format!("dir/file{n:02}.rs")).collect();
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let files = list(&refs);
        let c = completion("file", &files);
        assert_eq!(c.shown_items().len(), MAX_SHOWN);
        assert_eq!(c.matching.len(), 30);
        assert_eq!(c.shown_items()[0], "dir/file00.rs", "ties go by name");
    }

    #[test]
    fn typing_on_narrows_the_earlier_matches_and_deleting_widens_again() {
        let files = list(TREE);
        let mut c = completion("s", &files);
        let wide = c.matching.len();
        c.update("sm", Some(&files));
        assert!(c.matching.len() < wide);
        assert_eq!(c.matching, completion("sm", &files).matching);
        c.update("s", Some(&files));
        assert_eq!(c.matching.len(), wide);
    }

    #[test]
    fn selection_goes_round_and_a_new_query_starts_at_the_best() {
        let files = list(TREE);
        let mut c = completion("rs", &files);
        let shown: Vec<String> = c.shown_items().iter().map(|p| p.to_string()).collect();
        assert_eq!(c.chosen(), Some(shown[0].as_str()));
        assert!(c.select(false));
        assert_eq!(
            c.chosen(),
            shown.last().map(String::as_str),
            "up from the top"
        );
        assert!(c.select(true));
        assert!(c.select(true));
        assert_eq!(c.chosen(), Some(shown[1].as_str()));
        c.update("rs", Some(&list(TREE)));
        assert_eq!(
            c.chosen(),
            Some(shown[1].as_str()),
            "a new walk keeps the choice"
        );
        c.update("tui", Some(&files));
        assert_eq!(c.selected, 0);
        let mut empty = completion("zzz", &files);
        assert!(!empty.select(true));
    }

    #[test]
    fn nothing_is_offered_before_the_list_comes() {
        let mut c = Completion::new(Subject::Files, (0, 0));
        c.update("ma", None);
        assert!(!c.has_choice());
        c.update("ma", Some(&list(TREE)));
        assert_eq!(c.chosen(), Some("src/main.rs"));
    }

    #[test]
    fn the_quick_pass_passes_every_path_the_matcher_matches() {
        let matcher = SkimMatcherV2::default();
        let paths = [
            "src/main.rs",
            "SRC/Main.RS",
            "ünï/cödé.rs",
            "a/b/c",
            "",
            "MakeFile",
            "x_y-z.w",
        ];
        for query in [
            "", "s", "mai", "Mai", "src/m", "ödé", "ö", "MF", "mf", "cba", "xyzw", "ab",
        ] {
            for path in paths {
                let case_sensitive = query.bytes().any(|b| b.is_ascii_uppercase());
                let quick = quick_score(path.as_bytes(), query.as_bytes(), case_sensitive);
                let exact = matcher.fuzzy_match(path, query);
                assert_eq!(quick.is_some(), exact.is_some(), "{query:?} in {path:?}");
            }
        }
    }

    #[test]
    fn the_quick_score_ranks_word_starts_and_file_names_first() {
        let score = |path: &str, query: &str| quick_score(path.as_bytes(), query.as_bytes(), false);
        assert!(score("src/lexer.rs", "lex") > score("src/flexible.rs", "lex"));
        assert!(score("a/lexer.rs", "lex") > score("lexer/a.rs", "lex"));
        assert!(score("src/main.rs", "main") > score("src/m_a_i_n.rs", "main"));
        assert_eq!(score("src/main.rs", "zz"), None);
    }

    #[test]
    fn the_exact_score_orders_the_best_of_many() {
        let mut paths: Vec<String> = (0..2000)
            .map(|n| format!("deep/dir_{n}/lib_mod.rs"))
            .collect();
        paths.push("lm.rs".into());
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let c = completion("lm", &list(&refs));
        let matcher = SkimMatcherV2::default();
        let mut exact: Vec<(i64, &str)> = refs
            .iter()
            .filter_map(|path| Some((matcher.fuzzy_match(path, "lm")?, *path)))
            .collect();
        exact.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then(a.1.len().cmp(&b.1.len()))
                .then(a.1.cmp(b.1))
        });
        let expected: Vec<&str> = exact
            .iter()
            .take(MAX_SHOWN)
            .map(|(_, path)| *path)
            .collect();
        assert_eq!(c.shown_items(), expected);
    }

    fn text(line: &Line) -> String {
        line.spans
            .iter()
            .map(|span| span.content.as_ref())
            .collect()
    }

    #[test]
    fn a_long_path_loses_its_start_and_keeps_its_highlights() {
        let base = Style::default();
        let matched = Style::default().add_modifier(ratatui::style::Modifier::BOLD);
        let line = path_line("src/deep/file.rs", &[9, 10], 10, base, matched);
        assert_eq!(text(&line), "…p/file.rs");
        assert_eq!(line.width(), 10);
        let bold: Vec<&str> = line
            .spans
            .iter()
            .filter(|span| span.style == matched)
            .map(|span| span.content.as_ref())
            .collect();
        assert_eq!(bold, ["fi"]);
        let line = path_line("a.rs", &[], 10, base, matched);
        assert_eq!(text(&line), "a.rs");
        let wide = path_line("目录/文件.rs", &[], 7, base, matched);
        assert!(wide.width() <= 7, "{}", text(&wide));
    }
}
