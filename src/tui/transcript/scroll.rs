//! Where the transcript's window is, in a transcript of cells of known heights.
//!
//! Owns: [`HeightIndex`] (cell heights with O(log n) prefix sums and line lookup, so a
//! frame never walks the whole transcript) and [`Scroll`] (following the bottom, or
//! pinned where the user scrolled to, with a count of lines that arrived since).
//! Does not own: the heights themselves (cells compute them) or drawing.
//! Invariant: a pinned view is anchored to a cell and a line inside it, so content that
//! grows or shrinks elsewhere (a running card above, a toggle) does not move what the
//! user is reading; only scrolling to the bottom resumes following.

/// Heights of the cells, in order, as a Fenwick tree.
#[derive(Clone, Debug, Default)]
pub struct HeightIndex {
    heights: Vec<usize>,
    /// 1-based: `tree[i]` sums the heights in `(i - lowbit(i), i]`.
    tree: Vec<usize>,
}

fn lowbit(i: usize) -> usize {
    i & i.wrapping_neg()
}

impl HeightIndex {
    pub fn len(&self) -> usize {
        self.heights.len()
    }

    pub fn height(&self, cell: usize) -> usize {
        self.heights.get(cell).copied().unwrap_or(0)
    }

    pub fn total(&self) -> usize {
        self.prefix(self.heights.len())
    }

    pub fn clear(&mut self) {
        self.heights.clear();
        self.tree.clear();
    }

    pub fn push(&mut self, height: usize) {
        if self.tree.is_empty() {
            self.tree.push(0);
        }
        let i = self.heights.len() + 1;
        // The node covers (i - lowbit(i), i]: this height plus the cells before it.
        let node = height + self.prefix(i - 1) - self.prefix(i - lowbit(i));
        self.heights.push(height);
        self.tree.push(node);
    }

    /// Sets the height of `cell`; returns how much it grew (negative: shrank).
    pub fn set(&mut self, cell: usize, height: usize) -> isize {
        let Some(old) = self.heights.get_mut(cell) else {
            return 0;
        };
        let previous = std::mem::replace(old, height);
        let mut i = cell + 1;
        while i < self.tree.len() {
            self.tree[i] = self.tree[i] - previous + height;
            i += lowbit(i);
        }
        height as isize - previous as isize
    }

    /// The total height of the first `count` cells.
    pub fn prefix(&self, count: usize) -> usize {
        let mut i = count.min(self.heights.len());
        let mut sum = 0;
        while i > 0 {
            sum += self.tree[i];
            i -= lowbit(i);
        }
        sum
    }

    /// The cell holding absolute line `line`, and the line's offset inside it.
    pub fn locate(&self, line: usize) -> Option<(usize, usize)> {
        if line >= self.total() {
            return None;
        }
        let mut position = 0;
        let mut remaining = line;
        let mut step = self.tree.len().next_power_of_two();
        while step > 0 {
            let next = position + step;
            if next < self.tree.len() && self.tree[next] <= remaining {
                position = next;
                remaining -= self.tree[next];
            }
            step /= 2;
        }
        Some((position, remaining))
    }
}

/// What the window shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The last lines; new output scrolls into view.
    Bottom,
    /// From line `line` of cell `cell` down.
    Pinned { cell: usize, line: usize },
}

#[derive(Clone, Debug)]
pub struct Scroll {
    anchor: Anchor,
    /// Lines added below a pinned view since it was pinned.
    unseen: usize,
}

impl Default for Scroll {
    fn default() -> Self {
        Self {
            anchor: Anchor::Bottom,
            unseen: 0,
        }
    }
}

impl Scroll {
    #[cfg(test)]
    pub fn anchor(&self) -> Anchor {
        self.anchor
    }

    pub fn is_following(&self) -> bool {
        self.anchor == Anchor::Bottom
    }

    /// The first line in view for a window of `height` lines.
    pub fn top(&self, index: &HeightIndex, height: usize) -> usize {
        let last_top = index.total().saturating_sub(height);
        match self.anchor {
            Anchor::Bottom => last_top,
            Anchor::Pinned { cell, line } => {
                let line = line.min(index.height(cell).saturating_sub(1));
                (index.prefix(cell) + line).min(last_top)
            }
        }
    }

    /// Moves the window by `delta` lines (negative: up). Reaching the bottom resumes
    /// following; a transcript that fits the window is always followed.
    pub fn scroll_by(&mut self, index: &HeightIndex, height: usize, delta: isize) {
        let last_top = index.total().saturating_sub(height);
        let top = self
            .top(index, height)
            .saturating_add_signed(delta)
            .min(last_top);
        if top >= last_top {
            self.follow_bottom();
        } else {
            self.pin_at(index, top);
        }
    }

    pub fn jump_to_top(&mut self, index: &HeightIndex, height: usize) {
        if index.total() <= height {
            self.follow_bottom();
        } else {
            self.pin_at(index, 0);
        }
    }

    pub fn follow_bottom(&mut self) {
        self.anchor = Anchor::Bottom;
        self.unseen = 0;
    }

    fn pin_at(&mut self, index: &HeightIndex, top: usize) {
        if let Some((cell, line)) = index.locate(top) {
            if self.anchor == Anchor::Bottom {
                self.unseen = 0;
            }
            self.anchor = Anchor::Pinned { cell, line };
        }
    }

    /// Cell `cell` grew by `lines`: counted as unseen when it is below a pinned view's
    /// anchor (content above it does not push anything into view).
    pub fn grew(&mut self, cell: usize, lines: usize) {
        if let Anchor::Pinned { cell: anchor, .. } = self.anchor
            && cell >= anchor
        {
            self.unseen += lines;
        }
    }

    /// The hint to show over a pinned view: `↓ 12 new lines` when output arrived since
    /// the user scrolled up, `↓ 40 more lines` otherwise; `None` when following.
    pub fn indicator(&self, index: &HeightIndex, height: usize) -> Option<String> {
        if self.is_following() {
            return None;
        }
        let below = index
            .total()
            .saturating_sub(self.top(index, height) + height);
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        match self.unseen.min(below) {
            0 if below == 0 => None,
            0 => Some(format!("↓ {below} more line{}", plural(below))),
            unseen => Some(format!("↓ {unseen} new line{}", plural(unseen))),
        }
    }

    /// Keeps a pinned anchor valid after the cells were cleared or cut.
    pub fn clamp(&mut self, cells: usize) {
        if let Anchor::Pinned { cell, .. } = self.anchor
            && cell >= cells
        {
            self.follow_bottom();
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn index_of(heights: &[usize]) -> HeightIndex {
        let mut index = HeightIndex::default();
        for &height in heights {
            index.push(height);
        }
        index
    }

    #[test]
    fn prefix_sums_and_lookup_match_a_linear_scan() {
        let heights: Vec<usize> = (0..37).map(|i| (i * 7 + 3) % 5).collect();
        let mut index = index_of(&heights);
        let mut heights = heights;
        index.set(10, 9);
        heights[10] = 9;
        for count in 0..=heights.len() {
            assert_eq!(index.prefix(count), heights[..count].iter().sum::<usize>());
        }
        let mut line = 0;
        for (cell, &height) in heights.iter().enumerate() {
            for offset in 0..height {
                assert_eq!(index.locate(line), Some((cell, offset)), "line {line}");
                line += 1;
            }
        }
        assert_eq!(index.locate(line), None);
    }

    #[test]
    fn follows_until_scrolled_up_and_resumes_at_the_bottom() {
        let index = index_of(&[10, 10, 10]);
        let mut scroll = Scroll::default();
        assert_eq!(scroll.top(&index, 8), 22);
        scroll.scroll_by(&index, 8, -5);
        assert_eq!(scroll.anchor(), Anchor::Pinned { cell: 1, line: 7 });
        assert_eq!(scroll.top(&index, 8), 17);
        scroll.scroll_by(&index, 8, 3);
        assert!(!scroll.is_following());
        scroll.scroll_by(&index, 8, 2);
        assert!(scroll.is_following(), "reaching the bottom follows again");
        scroll.scroll_by(&index, 8, -1000);
        assert_eq!(scroll.top(&index, 8), 0);
    }

    #[test]
    fn a_pinned_view_stays_put_while_output_arrives() {
        let mut index = index_of(&[10, 10]);
        let mut scroll = Scroll::default();
        scroll.scroll_by(&index, 5, -8);
        let top = scroll.top(&index, 5);
        index.push(4);
        scroll.grew(2, 4);
        let grown = index.set(1, 12);
        scroll.grew(1, grown.unsigned_abs());
        assert_eq!(scroll.top(&index, 5), top);
        assert_eq!(
            scroll.indicator(&index, 5).as_deref(),
            Some("↓ 6 new lines")
        );
        scroll.follow_bottom();
        assert_eq!(scroll.indicator(&index, 5), None);
    }

    #[test]
    fn growth_above_the_anchor_does_not_move_the_view() {
        let mut index = index_of(&[3, 10, 10]);
        let mut scroll = Scroll::default();
        scroll.scroll_by(&index, 5, -10);
        let Anchor::Pinned { cell, line } = scroll.anchor() else {
            panic!("pinned");
        };
        index.set(0, 8);
        assert_eq!(scroll.anchor(), Anchor::Pinned { cell, line });
        assert_eq!(scroll.top(&index, 5), index.prefix(cell) + line);
        assert_eq!(
            scroll.indicator(&index, 5).as_deref(),
            Some("↓ 10 more lines")
        );
    }

    #[test]
    fn a_short_transcript_is_always_followed() {
        let index = index_of(&[2, 2]);
        let mut scroll = Scroll::default();
        scroll.scroll_by(&index, 10, -3);
        assert!(scroll.is_following());
        scroll.jump_to_top(&index, 10);
        assert!(scroll.is_following());
    }
}
