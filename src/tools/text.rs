//! Small text helpers shared by the tools: number formatting for messages, the numbered
//! line format, long-line cutting and UTF-8-safe byte cuts.
//!
//! Owns: how numbers, sizes and numbered lines look in tool output.
//! Does not own: any file access.
//! Invariant: every function here is total: no input makes it panic, and cuts always
//! land on UTF-8 character boundaries.

/// Lines longer than this many characters are cut when shown to the model.
pub(crate) const MAX_LINE_CHARS: usize = 2000;

/// `1234567` → `"1,234,567"`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `count(3, "line")` → `"3 lines"`, `count(1, "line")` → `"1 line"`.
pub(crate) fn count(n: u64, noun: &str) -> String {
    let suffix = if n == 1 { "" } else { "s" };
    format!("{} {noun}{suffix}", thousands(n))
}

/// A byte size for people: `"512 bytes"`, `"30.0 KB"`, `"1.2 MB"` (decimal units).
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [(&str, f64); 3] = [("GB", 1e9), ("MB", 1e6), ("KB", 1e3)];
    let value = bytes as f64;
    for (unit, scale) in UNITS {
        if value >= scale {
            return format!("{:.1} {unit}", value / scale);
        }
    }
    count(bytes, "byte")
}

/// One line in the numbered format every tool uses: right-aligned number, tab, text.
pub(crate) fn numbered(number: usize, line: &str) -> String {
    format!("{number:>6}\t{line}")
}

/// Appends `lines` (numbered from `first`) to `out`, one per output line. Line
/// terminators (`\n`, `\r\n`) are not expected in the items.
pub(crate) fn push_numbered<'a>(
    out: &mut String,
    first: usize,
    lines: impl IntoIterator<Item = &'a str>,
) {
    for (i, line) in lines.into_iter().enumerate() {
        out.push_str(&numbered(first + i, line));
        out.push('\n');
    }
}

/// Shows at most [`MAX_LINE_CHARS`] characters of a line. `total_chars` is the length
/// of the whole line, which may be longer than `text` when the caller only kept a
/// prefix of a huge line.
pub(crate) fn cut_long_line(text: &str, total_chars: usize) -> String {
    if total_chars <= MAX_LINE_CHARS {
        return text.to_string();
    }
    let kept = match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    };
    let cut = total_chars - kept.chars().count();
    format!("{kept}… [{} cut from this line]", count(cut as u64, "char"))
}

/// The largest char boundary of `text` that is `<= index`.
pub(crate) fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// The smallest char boundary of `text` that is `>= index`.
pub(crate) fn ceil_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

/// The 1-based line number of each byte offset in `offsets` (which must be sorted
/// ascending), counted in one pass over `text`.
pub(crate) fn line_numbers_at(text: &str, offsets: &[usize]) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut numbers = Vec::with_capacity(offsets.len());
    let mut line = 1;
    let mut scanned = 0;
    for &offset in offsets {
        let offset = offset.min(bytes.len()).max(scanned);
        line += bytes[scanned..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        scanned = offset;
        numbers.push(line);
    }
    numbers
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(12_345), "12,345");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn count_pluralizes() {
        assert_eq!(count(1, "line"), "1 line");
        assert_eq!(count(0, "line"), "0 lines");
        assert_eq!(count(5312, "line"), "5,312 lines");
    }

    #[test]
    fn sizes_use_decimal_units() {
        assert_eq!(human_size(1), "1 byte");
        assert_eq!(human_size(999), "999 bytes");
        assert_eq!(human_size(30_000), "30.0 KB");
        assert_eq!(human_size(1_234_567), "1.2 MB");
        assert_eq!(human_size(3_000_000_000), "3.0 GB");
    }

    #[test]
    fn numbered_lines_right_align_the_number() {
        let mut out = String::new();
        push_numbered(&mut out, 9, ["a", "b"]);
        assert_eq!(out, "     9\ta\n    10\tb\n");
    }

    #[test]
    fn long_lines_are_cut_with_a_count() {
        let line = "é".repeat(MAX_LINE_CHARS + 5);
        let shown = cut_long_line(&line, MAX_LINE_CHARS + 5);
        assert_eq!(
            shown,
            format!(
                "{}… [5 chars cut from this line]",
                "é".repeat(MAX_LINE_CHARS)
            )
        );
        assert_eq!(cut_long_line("short", 5), "short");
    }

    #[test]
    fn long_line_cut_counts_chars_beyond_the_kept_prefix() {
        let prefix = "x".repeat(MAX_LINE_CHARS + 10);
        let shown = cut_long_line(&prefix, 1_000_000);
        assert!(
            shown.ends_with("[998,000 chars cut from this line]"),
            "{shown}"
        );
    }

    #[test]
    fn char_boundaries_never_split_a_char() {
        let text = "aé€😀";
        for index in 0..=text.len() + 2 {
            let floor = floor_char_boundary(text, index);
            let ceil = ceil_char_boundary(text, index);
            assert!(text.is_char_boundary(floor) && floor <= index.min(text.len()));
            assert!(text.is_char_boundary(ceil) && ceil >= index.min(text.len()));
        }
    }

    #[test]
    fn line_numbers_are_found_for_sorted_offsets() {
        let text = "a\nbb\nccc\n";
        assert_eq!(line_numbers_at(text, &[0, 2, 3, 5, 9]), vec![1, 2, 2, 3, 4]);
    }
}
