//! What `lcm-tui` may put on a terminal. Stored text (tool output with ANSI colour
//! codes, carriage returns of progress bars, tabs, a stray BEL, CRLF line ends)
//! carries control characters that a terminal would run (recolour, move the cursor,
//! clear the screen) instead of showing. The browser draws every paragraph through
//! [`text`] (ratatui's `Paragraph` writes control characters into cells as they are)
//! and every table cell through [`fit`]; the commands print stored text through
//! [`visible_lines`] when stdout is a terminal (`Output::shown`; piped output stays
//! byte-exact). All of them make control characters visible, and `fit` / [`clip`]
//! measure in terminal columns (a Korean or Chinese character or an emoji takes two),
//! cutting only between grapheme clusters.

use std::borrow::Cow;

use ratatui::text::{Line, Span, Text};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// Tabs expand to the next multiple of this column, as `cat` shows them.
pub const TAB_STOP: usize = 8;

/// The columns `s` takes as ratatui lays it out: the sum of its grapheme clusters'
/// widths (a cluster of width 0 is left out).
pub fn columns(s: &str) -> usize {
    s.graphemes(true).map(UnicodeWidthStr::width).sum()
}

/// How a character that is not printed as itself is shown: `None` when it is.
/// A tab is expanded by the caller, which knows the column.
fn stand_in(c: char) -> Option<char> {
    match c {
        // C0 controls: their Control Pictures (␀ … ␟), ESC as ␛.
        '\0'..='\x1f' => char::from_u32(0x2400 + c as u32),
        '\x7f' => Some('\u{2421}'),
        // C1 controls (U+009B is an 8-bit CSI to some terminals).
        '\u{80}'..='\u{9f}' => Some('\u{fffd}'),
        _ => None,
    }
}

/// Appends `s` to `out` made visible, `col` being the column `out` has reached
/// (tabs expand from it; it is advanced by what is appended). `ends_line`: nothing
/// of the line follows `s` (a CR ending it is then a line end's).
fn push_visible(out: &mut String, s: &str, col: &mut usize, ends_line: bool) {
    let mut rest = s;
    while let Some(at) = rest.find(|c: char| stand_in(c).is_some()) {
        let (plain, tail) = rest.split_at(at);
        out.push_str(plain);
        *col += columns(plain);
        let mut chars = tail.chars();
        let c = chars.next().unwrap_or(' ');
        rest = chars.as_str();
        match c {
            '\t' => {
                let n = TAB_STOP - *col % TAB_STOP;
                out.extend(std::iter::repeat_n(' ', n));
                *col += n;
            }
            // The CR of a CRLF (or of a line's end) shows nothing.
            '\r' if (rest.is_empty() && ends_line) || rest.starts_with('\n') => {}
            c => {
                out.push(stand_in(c).unwrap_or(c));
                *col += 1;
            }
        }
    }
    out.push_str(rest);
    *col += columns(rest);
}

/// Whether `s` holds anything [`push_visible`] would change.
fn needs_change(s: &str) -> bool {
    s.chars().any(|c| stand_in(c).is_some())
}

/// `s` with its control characters made visible, starting at column 0: tabs as
/// spaces, ESC as ␛, other C0 controls (a line feed inside a line too) as their
/// Control Pictures, C1 controls as U+FFFD, the CR of a CRLF dropped. Borrowed
/// when nothing changes.
pub fn visible(s: &str) -> Cow<'_, str> {
    if !needs_change(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    push_visible(&mut out, s, &mut 0, true);
    Cow::Owned(out)
}

/// `s` made visible line by line: its line feeds stay (each line starts at column
/// 0 for its tabs, and a CRLF becomes a line feed). Borrowed when nothing changes.
pub fn visible_lines(s: &str) -> Cow<'_, str> {
    if !s.split('\n').any(needs_change) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for (i, l) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        push_visible(&mut out, l, &mut 0, true);
    }
    Cow::Owned(out)
}

/// One line of a paragraph made visible; tabs expand from the line's start across
/// its spans.
fn line(l: Line<'_>) -> Line<'_> {
    if !l.spans.iter().any(|s| needs_change(&s.content)) {
        return l;
    }
    let mut col = 0;
    let last = l.spans.len().saturating_sub(1);
    let spans = l
        .spans
        .into_iter()
        .enumerate()
        .map(|(i, span)| {
            let mut out = String::with_capacity(span.content.len());
            push_visible(&mut out, &span.content, &mut col, i == last);
            Span::styled(out, span.style)
        })
        .collect::<Vec<_>>();
    Line {
        spans,
        style: l.style,
        alignment: l.alignment,
    }
}

/// A paragraph's text made visible, line by line (styles and alignment kept).
pub fn text(t: Text<'_>) -> Text<'_> {
    let Text {
        lines,
        style,
        alignment,
    } = t;
    let mut out = Text::from(lines.into_iter().map(line).collect::<Vec<_>>());
    out.style = style;
    out.alignment = alignment;
    out
}

/// `s` made visible and cut to at most `cols` terminal columns, between grapheme
/// clusters; an ellipsis (one column) marks a cut.
pub fn clip(s: &str, cols: usize) -> String {
    let s = visible(s);
    if columns(&s) <= cols {
        return s.into_owned();
    }
    let room = cols.saturating_sub(1);
    let mut out = String::new();
    let mut used = 0;
    for g in s.graphemes(true) {
        let w = g.width();
        if used + w > room {
            break;
        }
        out.push_str(g);
        used += w;
    }
    if cols > 0 {
        out.push('…');
    }
    out
}

/// `s` as a table cell exactly `cols` terminal columns wide: [`clip`]ped, then
/// padded with spaces (a wide character that would straddle the edge is left out).
pub fn fit(s: &str, cols: usize) -> String {
    let mut out = clip(s, cols);
    let w = columns(&out);
    out.extend(std::iter::repeat_n(' ', cols.saturating_sub(w)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_sent() {
        assert_eq!(visible("plain 한국어 👩‍👩‍👧"), Cow::Borrowed("plain 한국어 👩‍👩‍👧"));
        assert_eq!(visible("\x1b[31mFAIL\x1b[0m"), "␛[31mFAIL␛[0m");
        assert_eq!(visible("a\x07b\x00c\x7fd\u{9b}e"), "a␇b␀c␡d\u{fffd}e");
        // Text is split into lines before it gets here: a line feed left inside a
        // line is shown (ratatui would drop it and join the words).
        assert_eq!(visible("10%\r20%\r\nnext"), "10%␍20%␊next");
        assert_eq!(visible("line\r"), "line");
    }

    #[test]
    fn lines_keep_their_line_feeds() {
        assert_eq!(visible_lines("a\nb\n"), Cow::Borrowed("a\nb\n"));
        assert_eq!(
            visible_lines("\x1b[1ma\r\n\tb\n"),
            format!("␛[1ma\n{}b\n", " ".repeat(8))
        );
        assert_eq!(visible_lines("x\r\n"), "x\n");
    }

    #[test]
    fn tabs_expand_to_the_next_stop_in_columns() {
        assert_eq!(visible("\tx"), format!("{}x", " ".repeat(8)));
        assert_eq!(visible("ab\tx"), format!("ab{}x", " ".repeat(6)));
        // Two columns per Hangul syllable: 6 columns, then 2 spaces.
        assert_eq!(visible("한국어\tx"), "한국어  x");
        // Across spans of one line, from the line's start.
        let l = line(Line::from(vec![Span::raw("abc"), Span::raw("\tx")]));
        assert_eq!(l.spans[1].content, format!("{}x", " ".repeat(5)));
        // A CR ending a span is shown unless the line ends there.
        let l = line(Line::from(vec![Span::raw("a\r"), Span::raw("b\r")]));
        assert_eq!(
            (l.spans[0].content.as_ref(), l.spans[1].content.as_ref()),
            ("a␍", "b")
        );
    }

    #[test]
    fn clip_counts_columns_and_keeps_clusters_whole() {
        assert_eq!(clip("한국어 텍스트", 7), "한국어…");
        assert_eq!(clip("short", 10), "short");
        // A family emoji is one cluster of two columns: never split.
        assert_eq!(clip("👩‍👩‍👧‍👦👩‍👩‍👧‍👦", 3), "👩‍👩‍👧‍👦…");
        // e + combining acute stays together.
        assert_eq!(
            clip("e\u{301}e\u{301}e\u{301}", 3),
            "e\u{301}e\u{301}e\u{301}"
        );
        assert_eq!(clip("e\u{301}e\u{301}e\u{301}x", 3), "e\u{301}e\u{301}…");
        assert_eq!(clip("abc", 0), "");
    }

    #[test]
    fn fit_pads_to_exactly_the_width() {
        assert_eq!(fit("세션", 6), "세션  ");
        assert_eq!(fit("세션-한국어", 6), "세션-…");
        assert_eq!(fit("a한국", 3), "a… ");
        assert_eq!(fit("ab\x1bc", 6), "ab␛c  ");
        for s in [
            "세션-한국어-긴-이름",
            "中文会话",
            "👩‍👩‍👧‍👦 family",
            "\u{3000}\u{a0}x",
            "שלום",
        ] {
            for cols in 0..12 {
                assert_eq!(columns(&fit(s, cols)), cols, "{s:?} at {cols}");
            }
        }
    }
}
